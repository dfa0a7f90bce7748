/// How long the writer waits, once it has a request, for more before it commits: the gathering of group commit.
///
/// Every commit costs an fsync whatever it carries (and its CPU: ≈ 37 µs on the benchmark machine), so a group that
/// waits a little for the requests about to come saves fsyncs at the price of that wait. The writer waits until as
/// many requests are pending as the **largest of its last ``window`` groups**, for at most as long as its last
/// commit took (the time a request that just misses this group would wait for the next one anyway), and never more
/// than the configured maximum (``SQLiteStore/Configuration/maxGroupGather``; zero: no wait).
///
/// - Requests arriving at random (many devices' senders, acknowledgements): a group waits about one commit's
///   duration and carries what it brings; at 5,000 messages/s that doubled the sends per fsync (1.5 → 3.0) and cut
///   the CPU per delivered message by a sixth (docs/benchmarks.md).
/// - A few senders that each wait for their answer: the target settles at their number and a group waits until they
///   are all in. (Waiting only for as many as the last group, as before, let two half-size groups alternate, one
///   committing while the other's senders got their answers: a few percent more sends/s in that shape, at more CPU
///   per send.)
/// - One sender at a time: groups of one, no wait.
struct GroupGather {
    /// How many of the last groups set the target.
    static let window = 32

    private var sizes = [Int](repeating: 0, count: window)
    private var next = 0
    private var lastCommitTime = Duration.zero
    /// The longest wait; zero: commit at once.
    let maxWait: Duration

    init(maxWait: Duration) {
        self.maxWait = maxWait
    }

    /// Records a committed group.
    mutating func committed(groupSize: Int, commitTime: Duration) {
        sizes[next] = groupSize
        next = (next + 1) % Self.window
        lastCommitTime = commitTime
    }

    /// The wait before the next commit.
    var wait: WriteQueue.Gather {
        WriteQueue.Gather(count: sizes.max() ?? 0, timeout: min(lastCommitTime, maxWait))
    }
}
