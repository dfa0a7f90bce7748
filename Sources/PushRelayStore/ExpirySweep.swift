/// How the SQLite store finds expired messages in device queues: a sweep of the `messages` table in id order, a
/// chunk of rows per transaction, instead of an index on `expires_at`.
///
/// An index on `expires_at` is one more B-tree page written, and one more WAL frame, in every commit that stores or
/// acknowledges a message (a third of a small send's frames), for a job done once a minute. Without it the purge
/// reads the table itself: each ``PushStore/purge(limit:)`` examines up to ``Configuration/expirySweepChunks``
/// chunks of ``Configuration/expirySweepChunkRows`` rows after where the last one stopped, deletes the expired
/// rows among them, and starts over from the lowest id once it reaches the end. Every chunk is its own write
/// request, so sends and acknowledgements commit between chunks; none holds the writer for long.
///
/// An expired message is never delivered nor counted against a queue's limits (every queue read and policy count
/// filters on `expires_at`, through the `messages_queue` index); the sweep only gives its space back. A store of up to
/// `expirySweepChunks × expirySweepChunkRows` rows (200,000 by default) is swept whole at every purge, as before;
/// a larger one over several purges.
///
/// The cursor lives in memory (``SQLiteStore``) and starts at the lowest id when the store opens; it moves once a
/// chunk has committed, so a chunk whose group failed is examined again.
enum ExpirySweep {
    /// What one chunk did.
    struct Chunk {
        /// Expired rows deleted.
        var deleted = 0
        /// Whether the chunk reached the end of the table.
        var reachedEnd = false
        /// Where the next chunk starts: after this id (0: from the lowest id).
        var next: Int64 = 0
    }

    /// Examines up to `rows` messages with ids above `start` and deletes the expired ones, at most `limit`. Runs
    /// inside a write request.
    static func chunk(_ transaction: WriteTransaction, after start: Int64, rows: Int, limit: Int) throws(StoreError)
        -> Chunk
    {
        let connection = transaction.connection
        let rows = max(rows, 1)
        let select = try connection.statement("SELECT id, expires_at FROM messages WHERE id > ?1 ORDER BY id LIMIT ?2")
        try select.bind(start, at: 1)
        try select.bind(Int64(rows), at: 2)
        var chunk = Chunk()
        var examined = 0
        var last = start
        var expired: [Int64] = []
        while try select.step() {
            examined += 1
            last = select.int64(0)
            if select.int64(1) <= transaction.nowMicros {
                expired.append(last)
            }
        }
        // Fewer rows than asked: nothing is left after `last`.
        chunk.reachedEnd = examined < rows
        if expired.count > limit {
            // Past the limit: the next chunk starts after the last row deleted, so none is skipped.
            expired.removeLast(expired.count - limit)
            last = expired.last ?? start
            chunk.reachedEnd = false
        }
        if !expired.isEmpty {
            let delete = try connection.statement("DELETE FROM messages WHERE id = ?1")
            for id in expired {
                try delete.bind(id, at: 1)
                try delete.run()
            }
            chunk.deleted = expired.count
            transaction.discardQueueStates()
        }
        chunk.next = chunk.reachedEnd ? 0 : last
        return chunk
    }
}
