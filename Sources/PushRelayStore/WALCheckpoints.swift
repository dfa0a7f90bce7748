import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging

/// When the writer's WAL is checkpointed, and by whom: decided on the writer thread after every commit from the
/// WAL's size (SQLite's WAL hook) and what the last checkpoints reported.
///
/// SQLite's automatic checkpoint runs *inside* the commit that takes the WAL past 1,000 frames: every group behind it
/// waits for a few milliseconds of page copies and a database fsync, several times a second at 5,000 messages/s
/// (docs/benchmarks.md: it set the p99 of the answer). Here a thread of its own does that work
/// (``BackgroundCheckpointer``, a passive checkpoint beside the committing writer); but a passive checkpoint can
/// only copy the frames committed before it started, and the WAL starts over only when *everything* in it has been
/// copied, so beside a busy writer it would grow for ever. So the writer finishes: once what is left is at most
/// ``tail`` frames, it checkpoints those itself, after answering its group (no new frames can appear meanwhile),
/// and its next commit starts the WAL over.
struct CheckpointPolicy: Equatable {
    /// The WAL size (frames, i.e. pages) from which a checkpoint starts: SQLite's default automatic-checkpoint
    /// interval. (A larger one made the WAL-index lookups of the pages every commit rewrites longer: at 4,000,
    /// 9 % of a send's instructions; docs/benchmarks.md.)
    static let threshold = 1000
    /// The most frames the writer copies itself; more is left to the background checkpointer.
    static let tail = 100

    /// What to do after a commit.
    enum Action: Equatable {
        case none
        /// Ask the background checkpointer for a pass over this WAL (`generation`).
        case background(generation: Int)
        /// The writer checkpoints the few frames left, now.
        case writer
    }

    /// The WAL's size after the last commit.
    private(set) var frames = 0
    /// How many of its frames the last checkpoint left in the database file.
    private(set) var backfilled = 0
    /// How many times the WAL started over (seen as a commit that left it smaller than the one before). Tags
    /// background passes, so that a result about an earlier WAL is not taken for this one.
    private(set) var generation = 0
    /// A background pass was asked for and its result not taken yet: no other checkpoint until it is.
    private(set) var backgroundPending = false
    /// The WAL's size when the writer last checkpointed it. If the WAL did not start over after that (a reader
    /// still held an old snapshot), the writer waits for ``tail`` more frames before it tries again.
    private var writerCheckpointedAt: Int?
    /// After a background pass that copied nothing (a reader's snapshot stops it where it is) or failed: the WAL's
    /// size from which the next pass is asked for, a ``tail`` later, so that a stuck reader does not make the
    /// checkpointer run a useless pass at every commit.
    private var backgroundRetryAt: Int?

    /// The writer committed and its WAL holds `frames` frames.
    mutating func committed(frames: Int) -> Action {
        if frames < self.frames {
            self.generation += 1
            self.backfilled = 0
            self.writerCheckpointedAt = nil
            self.backgroundRetryAt = nil
        }
        self.frames = frames
        guard frames >= Self.threshold, !self.backgroundPending else { return .none }
        if frames - self.backfilled > Self.tail {
            if let at = self.backgroundRetryAt, frames < at { return .none }
            self.backgroundPending = true
            return .background(generation: self.generation)
        }
        if let at = self.writerCheckpointedAt, frames - at < Self.tail {
            return .none
        }
        self.writerCheckpointedAt = frames
        return .writer
    }

    /// The background pass asked for with `generation` ended with `result` (nil: it failed).
    mutating func backgroundFinished(generation: Int, _ result: WALCheckpointResult?) {
        self.backgroundPending = false
        guard generation == self.generation else { return }
        if case .done(_, let backfilled)? = result, backfilled > self.backfilled {
            self.backfilled = backfilled
            self.backgroundRetryAt = nil
        } else {
            self.backgroundRetryAt = self.frames + Self.tail
        }
    }

    /// The writer's own checkpoint ended with `result`.
    mutating func writerFinished(_ result: WALCheckpointResult) {
        if case .done(_, let backfilled) = result {
            self.backfilled = backfilled
        }
    }
}

/// The writer's side of checkpointing (``CheckpointPolicy``): counts the WAL's frames at every commit, asks the
/// background checkpointer for passes, and checkpoints the tail itself. Used on the writer thread only.
final class WALCheckpoints {
    private var policy = CheckpointPolicy()
    private let frames = WALFrameCount()
    private let connection: SQLiteConnection
    private let background: BackgroundCheckpointer
    private let logger: Logger
    private var failing = false

    /// Counters (``record(into:)``).
    private(set) var backgroundPasses = 0
    private(set) var writerCheckpoints = 0
    /// Frames the writer copied itself, summed (the background's share is the rest).
    private(set) var writerFrames = 0
    var restarts: Int { self.policy.generation }

    /// Takes over checkpointing from SQLite's automatic checkpoint on `connection` (the writer's); the background
    /// checkpointer opens its own connection to `path`.
    init(connection: SQLiteConnection, path: String, busyTimeout: Duration, logger: Logger) {
        self.connection = connection
        self.logger = logger
        self.background = BackgroundCheckpointer(path: path, busyTimeout: busyTimeout, logger: logger)
        connection.countWALFrames(into: self.frames)
    }

    /// Copies the counters and the WAL's size into the writer's statistics.
    func record(into statistics: inout GroupCommitStatistics) {
        statistics.backgroundCheckpoints = self.backgroundPasses
        statistics.writerCheckpoints = self.writerCheckpoints
        statistics.writerCheckpointFrames = self.writerFrames
        statistics.walRestarts = self.restarts
        statistics.walPages = self.policy.frames
    }

    /// Starts the background checkpointer's thread.
    func start() {
        self.background.start()
    }

    /// After a committed group was answered.
    func committed() {
        if let (generation, result) = self.background.takeFinished() {
            self.policy.backgroundFinished(generation: generation, result)
            if case .done? = result {
                self.backgroundPasses += 1
            }
        }
        switch self.policy.committed(frames: self.frames.frames) {
        case .none:
            break
        case .background(let generation):
            if !self.background.ask(generation: generation) {
                // No background thread (it could not open its connection): the writer does it, as SQLite would.
                self.policy.backgroundFinished(generation: generation, self.writerCheckpoint())
            }
        case .writer:
            if let result = self.writerCheckpoint() {
                self.policy.writerFinished(result)
            }
        }
    }

    /// A checkpoint on the writer's connection, counted.
    private func writerCheckpoint() -> WALCheckpointResult? {
        let before = self.policy.backfilled
        let result = Self.checkpoint(self.connection, failing: &self.failing, logger: self.logger)
        if case .done(_, let backfilled)? = result {
            self.writerCheckpoints += 1
            self.writerFrames += max(backfilled - before, 0)
        }
        return result
    }

    /// A passive checkpoint on `connection`; nil when it failed, logged once until one succeeds again.
    static func checkpoint(_ connection: SQLiteConnection, failing: inout Bool, logger: Logger) -> WALCheckpointResult? {
        do {
            let result = try connection.checkpointPassively()
            failing = false
            return result
        } catch {
            if !failing {
                logger.warning("WAL checkpoint failed", metadata: ["relay.error": "\(error)"])
                failing = true
            }
            return nil
        }
    }

    /// Stops the background checkpointer (a pass in progress finishes first).
    func close() {
        self.background.close()
    }
}

/// A thread with its own connection that runs passive checkpoints when the writer asks (``WALCheckpoints``): the
/// page copies and the database fsync of a checkpoint happen beside the writer's commits, not inside one.
final class BackgroundCheckpointer: @unchecked Sendable {
    private enum State {
        case idle
        case running
        case closing
        case stopped
    }

    private let condition = NSCondition()
    private var state = State.idle
    private var asked: Int?
    private var finished: (generation: Int, result: WALCheckpointResult?)?
    private let path: String
    private let busyTimeout: Duration
    private let logger: Logger

    init(path: String, busyTimeout: Duration, logger: Logger) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.logger = logger
    }

    func start() {
        self.condition.lock()
        self.state = .running
        self.condition.unlock()
        let thread = Thread { [self] in
            #if canImport(Glibc)
            GroupCommitWriter.nameCurrentThread("store-checkpoint")
            #endif
            self.run()
        }
        thread.start()
    }

    /// Asks for a pass over the WAL of `generation`; false when the thread is not running.
    func ask(generation: Int) -> Bool {
        self.condition.lock()
        defer { self.condition.unlock() }
        guard self.state == .running else { return false }
        self.asked = generation
        self.condition.broadcast()
        return true
    }

    /// The last pass's result, once (nil: none finished since the last call).
    func takeFinished() -> (generation: Int, result: WALCheckpointResult?)? {
        self.condition.lock()
        defer { self.condition.unlock() }
        defer { self.finished = nil }
        return self.finished
    }

    /// Stops the thread and waits for it (a pass in progress finishes first).
    func close() {
        self.condition.lock()
        defer { self.condition.unlock() }
        if self.state == .running {
            self.state = .closing
            self.condition.broadcast()
        }
        while self.state == .closing {
            self.condition.wait()
        }
    }

    private func run() {
        var connection: SQLiteConnection?
        do {
            let opened = try SQLiteConnection(path: self.path, busyTimeout: self.busyTimeout)
            try opened.execute(SQLiteSchema.connectionPragmas(writer: false))
            // A first read opens the WAL for this connection.
            try opened.execute("SELECT 1 FROM sqlite_schema LIMIT 1")
            connection = opened
        } catch {
            self.logger.error(
                "cannot open the checkpointer's connection: the writer checkpoints itself",
                metadata: ["relay.error": "\(error)"])
        }
        var failing = false
        while let connection {
            self.condition.lock()
            while self.asked == nil && self.state == .running {
                self.condition.wait()
            }
            guard self.state == .running, let generation = self.asked else {
                self.condition.unlock()
                break
            }
            self.asked = nil
            self.condition.unlock()

            let result = WALCheckpoints.checkpoint(connection, failing: &failing, logger: self.logger)
            self.condition.lock()
            self.finished = (generation, result)
            self.condition.unlock()
        }
        connection?.close()
        self.condition.lock()
        if let generation = self.asked {
            // Asked for but never run (the connection could not open): the writer must not wait for it.
            self.finished = (generation, nil)
            self.asked = nil
        }
        self.state = .stopped
        self.condition.broadcast()
        self.condition.unlock()
    }
}
