import Foundation
import Logging
import Testing

@testable import PushRelayStore

/// Who checkpoints the WAL, and when (``CheckpointPolicy``), without threads or files.
@Suite struct CheckpointPolicyTests {
    private let threshold = CheckpointPolicy.threshold
    private let tail = CheckpointPolicy.tail

    @Test("below the threshold nothing; at it one background pass, and nothing else until its result is taken")
    func backgroundFirst() {
        var policy = CheckpointPolicy()
        #expect(policy.committed(frames: 6) == .none)
        #expect(policy.committed(frames: threshold - 1) == .none)
        #expect(policy.committed(frames: threshold) == .background(generation: 0))
        #expect(policy.committed(frames: threshold + 50) == .none)
        #expect(policy.committed(frames: 5 * threshold) == .none, "a pass is pending, however large the WAL")
    }

    @Test("what a pass leaves: more than the tail asks for another pass, the tail is the writer's")
    func theWriterFinishesTheTail() {
        var policy = CheckpointPolicy()
        _ = policy.committed(frames: threshold)
        policy.backgroundFinished(generation: 0, .done(log: threshold, backfilled: threshold - 2 * tail))
        #expect(policy.committed(frames: threshold + 6) == .background(generation: 0), "2 tails + 6 left")
        policy.backgroundFinished(generation: 0, .done(log: threshold + 6, backfilled: threshold))
        #expect(policy.committed(frames: threshold + 12) == .writer, "12 left")
        policy.writerFinished(.done(log: threshold + 12, backfilled: threshold + 12))
        #expect(policy.backfilled == threshold + 12)
    }

    @Test("a WAL that did not start over (a reader held an old snapshot): the writer tries again only a tail later")
    func theWriterDoesNotCheckpointEveryCommit() {
        var policy = CheckpointPolicy()
        _ = policy.committed(frames: threshold)
        policy.backgroundFinished(generation: 0, .done(log: threshold, backfilled: threshold))
        #expect(policy.committed(frames: threshold + 6) == .writer)
        policy.writerFinished(.done(log: threshold + 6, backfilled: threshold + 6))
        // The next commit appended instead of starting over.
        #expect(policy.committed(frames: threshold + 12) == .none)
        #expect(policy.committed(frames: threshold + 6 + tail - 1) == .none)
        #expect(policy.committed(frames: threshold + 6 + tail) == .writer)
    }

    @Test("a smaller WAL after a commit started over: a new generation, and a pass about the old one is ignored")
    func restartsAreCounted() {
        var policy = CheckpointPolicy()
        _ = policy.committed(frames: threshold + 40)
        #expect(policy.committed(frames: 7) == .none)
        #expect(policy.generation == 1)
        policy.backgroundFinished(generation: 0, .done(log: threshold + 40, backfilled: threshold + 40))
        #expect(policy.backfilled == 0, "the result was about the WAL before it started over")
        #expect(!policy.backgroundPending)
        #expect(policy.committed(frames: threshold) == .background(generation: 1))
    }

    @Test("a pass that failed, was busy or copied nothing: the next is asked for a tail of frames later, not at every commit")
    func passesWithoutProgressBackOff() {
        var policy = CheckpointPolicy()
        _ = policy.committed(frames: threshold)
        policy.backgroundFinished(generation: 0, nil)
        #expect(policy.committed(frames: threshold + 6) == .none)
        #expect(policy.committed(frames: threshold + tail - 1) == .none)
        #expect(policy.committed(frames: threshold + tail) == .background(generation: 0))
        policy.backgroundFinished(generation: 0, .busy)
        #expect(policy.backfilled == 0)
        #expect(policy.committed(frames: threshold + tail + 6) == .none)
        #expect(policy.committed(frames: threshold + 2 * tail) == .background(generation: 0))
        // A reader's snapshot stops the copy at 300 frames: progress once, then none.
        policy.backgroundFinished(generation: 0, .done(log: threshold + 2 * tail, backfilled: 300))
        #expect(policy.committed(frames: threshold + 2 * tail + 6) == .background(generation: 0), "it made progress")
        policy.backgroundFinished(generation: 0, .done(log: threshold + 2 * tail + 6, backfilled: 300))
        #expect(policy.committed(frames: threshold + 2 * tail + 12) == .none, "it copied nothing")
        #expect(policy.committed(frames: threshold + 3 * tail + 6) == .background(generation: 0))
        // The WAL starting over ends the back-off.
        policy.backgroundFinished(generation: 0, .done(log: threshold + 3 * tail + 6, backfilled: 300))
        _ = policy.committed(frames: 6)
        #expect(policy.committed(frames: threshold) == .background(generation: 1))
    }
}

/// The store's checkpoints on a real database: a thread of their own copies the WAL, the writer only its tail, and
/// the WAL starts over instead of growing.
@Suite struct WALCheckpointTests {
    @Test("thousands of frames committed: passes by the checkpointer, tails by the writer, the WAL starts over and stays small")
    func checkpointsBesideTheWriter() async throws {
        try await withTemporaryDirectory { directory in
            let store = try SQLiteStore(configuration: SQLiteStore.Configuration(directory: directory))
            let wal = directory + "/pushrelay.sqlite-wal"
            var largestWAL = 0
            // Each probe commits a 64 KiB row: ≈ 17 frames, so 600 of them ≈ 10 × the threshold.
            for _ in 0..<600 {
                try await store.probeCommit()
                let size = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
                largestWAL = max(largestWAL, size)
            }
            let statistics = store.groupCommitStatistics
            await store.close()
            #expect(statistics.backgroundCheckpoints >= 1)
            #expect(statistics.writerCheckpoints >= 1)
            #expect(statistics.writerCheckpointFrames >= 1, "the writer copied the frames committed during a pass")
            #expect(statistics.walRestarts >= 3, "10 thresholds' worth of frames")
            #expect(
                statistics.writerCheckpointFrames <= statistics.writerCheckpoints * CheckpointPolicy.tail,
                "the writer copies only tails")
            // Without restarts the WAL would reach ≈ 10,000 frames (≈ 40 MB).
            #expect(largestWAL <= 3 * CheckpointPolicy.threshold * (4096 + 24), "largest WAL: \(largestWAL) bytes")
        }
    }

    @Test("no checkpointer thread (its connection cannot open): the writer checkpoints by itself and the WAL starts over")
    func writerFallsBack() async throws {
        try await withTemporaryDirectory { directory in
            let connection = try WALWriteTests.create(directory)
            // The checkpointer opens a file in a directory that does not exist: its thread stops at once.
            let checkpoints = WALCheckpoints(
                connection: connection, path: directory + "/missing/wal.db", busyTimeout: .seconds(1),
                logger: Logger(label: "test"))
            checkpoints.start()
            for n in 0..<1_500 where checkpoints.restarts < 2 {
                _ = try WALWriteTests.commit(connection) { try WALWriteTests.insert(connection, rows: 1, size: 8_000) }
                checkpoints.committed()
                if n % 100 == 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
            checkpoints.close()
            #expect(checkpoints.restarts >= 2)
            #expect(checkpoints.backgroundPasses == 0)
            #expect(checkpoints.writerCheckpoints >= 1)
            #expect(try WALWriteTests.count(connection, "SELECT count(*) FROM t") > 0)
            connection.close()
        }
    }

    @Test("a reader holding an old snapshot keeps the WAL from starting over; once it lets go, it starts over")
    func aReaderDelaysTheRestart() async throws {
        try await withTemporaryDirectory { directory in
            let store = try SQLiteStore(configuration: SQLiteStore.Configuration(directory: directory))
            try await store.probeCommit()
            let reader = try SQLiteConnection(path: directory + "/pushrelay.sqlite", busyTimeout: .seconds(5))
            try reader.execute("BEGIN")
            try reader.execute("SELECT count(*) FROM meta")
            for _ in 0..<150 {
                try await store.probeCommit()
            }
            let held = store.groupCommitStatistics
            #expect(held.walRestarts == 0, "the reader's snapshot is in the WAL")
            try reader.execute("COMMIT")
            reader.close()
            for _ in 0..<150 {
                try await store.probeCommit()
            }
            let released = store.groupCommitStatistics
            await store.close()
            #expect(released.walRestarts >= 1)
            // While held, the writer and the checkpointer tried at most once per tail of frames, not at every
            // commit (150 commits; a probe writes ≈ 34 frames).
            #expect(held.writerCheckpoints <= held.walPages / CheckpointPolicy.tail + 1, "\(held)")
            #expect(held.backgroundCheckpoints <= held.walPages / CheckpointPolicy.tail + 2, "\(held)")
            #expect(held.backgroundCheckpoints < 100, "\(held)")
        }
    }
}
