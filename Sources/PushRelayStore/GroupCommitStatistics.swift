/// Counters of the group-commit writer (for metrics, benchmarks and tests).
public struct GroupCommitStatistics: Sendable, Hashable {
    /// Transactions committed (each one fsync).
    public var transactions = 0
    /// Requests committed (a request is one call: an enqueue of N messages is one request).
    public var requests = 0
    /// The most requests one transaction held.
    public var largestGroup = 0
    /// Groups rolled back and retried request by request.
    public var groupFailures = 0
    /// Time spent in COMMIT (WAL write and fsync), summed, in microseconds of wall time.
    public var commitMicros: Int64 = 0
    /// CPU time of the writer thread since open, in microseconds (the writer's capacity on an idle core is about
    /// `requests / writerCPUMicros` per microsecond); with ``SQLiteStore/Configuration/commitEventLoop``, the event
    /// loop's CPU time spent in the writer's turns.
    public var writerCPUMicros: Int64 = 0
    /// Checkpoints of the WAL run by the checkpointer thread beside the writer.
    public var backgroundCheckpoints = 0
    /// Checkpoints the writer ran itself (the last few frames, after answering a group; all of them when the
    /// checkpointer thread could not start).
    public var writerCheckpoints = 0
    /// Frames the writer's own checkpoints copied into the database file, summed.
    public var writerCheckpointFrames = 0
    /// Times the WAL started over from its beginning (every frame was in the database file).
    public var walRestarts = 0
    /// Pages in the WAL after the last commit: what checkpoints have not yet let start over.
    public var walPages = 0

    /// Creates zeroed counters.
    public init() {}
}
