extension Duration {
    /// The duration in seconds, with its fraction (`TimeInterval`'s unit, and the backoff's arithmetic).
    var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
