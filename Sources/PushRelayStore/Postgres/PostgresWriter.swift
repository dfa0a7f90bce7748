import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import PushRelayCore

/// The PostgreSQL writer of one node: a task with its own connection that takes every pending request, runs the
/// sends and acknowledgements among them in ONE transaction (lock the devices, load their queues, apply the
/// policy in memory, one multi-row statement, one `NOTIFY`, `COMMIT`), then resumes every caller. Other requests
/// run in their own transactions, in submission order. Between groups it expands topic messages, one bounded
/// batch per transaction, any node taking any message (`FOR UPDATE SKIP LOCKED`).
///
/// A commit returns once PostgreSQL has flushed it (`synchronous_commit=on`). A lost connection fails the requests
/// in flight with ``StoreError/Code/unavailable`` and is replaced on the next request. No transaction waits for
/// ever: each has a deadline (``Deadline``) past which its connection is dropped, and no statement outlives its
/// connection (``PostgresConnectionWatch``).
final class PostgresWriter: @unchecked Sendable {
    let queue = PostgresWriteQueue()
    private let context: PostgresStoreContext
    // Touched only by the writer task.
    private var watch: PostgresConnectionWatch?
    /// The backend of `watch`'s connection, ended when a deadline gives the connection up.
    private var backend: PostgresBackend?
    /// The read pool, through which an abandoned backend is ended.
    private let client: PostgresClient
    private var fanOutHint = true
    private var connectionNumber = 0
    /// Set when a connection attempt failed after the queue closed: the writes still queued then fail at once
    /// instead of each waiting for a connect timeout, so that closing the store does not wait on PostgreSQL.
    private var unreachableWhileClosing = false

    /// How long a transaction may run before its connection is dropped under it.
    enum Deadline {
        /// The whole transaction (a group of sends and acknowledgements: their callers wait for it).
        case total(Duration)
        /// Each statement (other writes, which may be long but must go on being answered: an import, a purge).
        case perStatement(Duration)
    }

    init(context: PostgresStoreContext, watch: PostgresConnectionWatch, backend: PostgresBackend, client: PostgresClient) {
        self.context = context
        self.watch = watch
        self.backend = backend
        self.client = client
    }

    // MARK: Callers

    /// Runs `body` in its own transaction and returns its result once committed.
    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresWriteContext) async throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            self.write(body) { continuation.resume(with: $0) }
        }
    }

    /// ``write(_:)`` without a task of the caller's: `completion` gets the result once committed, on the writer's
    /// task (at once when closed).
    func write<T: Sendable>(
        _ body: @escaping @Sendable (PostgresWriteContext) async throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let result = NIOLockedValueBox<T?>(nil)
        let request = PostgresIsolatedRequest(
            perform: { context in
                let value = try await body(context)
                result.withLockedValue { $0 = value }
            },
            complete: { error in
                if let error {
                    completion(.failure(error))
                } else if let value = result.withLockedValue({ $0 }) {
                    completion(.success(value))
                } else {
                    completion(.failure(StoreError.unavailable("write produced no result")))
                }
            }
        )
        if !self.queue.submit(.isolated(request)) {
            completion(.failure(StoreError.closed))
        }
    }

    /// Submits a send or an acknowledgement to the next group.
    func hot(_ kind: PostgresHotRequest.Kind) async throws -> PostgresHotRequest.Result {
        try await withCheckedThrowingContinuation { continuation in
            self.hot(kind) { continuation.resume(with: $0) }
        }
    }

    /// ``hot(_:)`` without a task: `complete` gets the outcome on the writer's task (at once when closed).
    func hot(
        _ kind: PostgresHotRequest.Kind,
        complete: @escaping @Sendable (Swift.Result<PostgresHotRequest.Result, any Error>) -> Void
    ) {
        if !self.queue.submit(.hot(PostgresHotRequest(kind: kind, complete: complete))) {
            complete(.failure(StoreError.closed))
        }
    }

    // MARK: The task

    /// Serves requests until the queue closes and is empty; then closes the connection.
    func run() async {
        while true {
            let (jobs, fanOutRequested, closing) = await self.queue.next()
            if fanOutRequested { self.fanOutHint = true }
            var index = 0
            while index < jobs.count {
                switch jobs[index] {
                case .isolated(let request):
                    await self.runIsolated(request)
                    index += 1
                case .hot:
                    var group: [PostgresHotRequest] = []
                    while index < jobs.count, case .hot(let request) = jobs[index] {
                        group.append(request)
                        index += 1
                    }
                    await self.runHotGroup(group)
                }
            }
            if closing && jobs.isEmpty { break }
            if self.fanOutHint && self.context.configuration.automaticFanOut
                && !self.context.configuration.readOnly && !closing {
                self.fanOutHint = await self.runFanOutStep()
                if self.fanOutHint { self.queue.requestFanOut() }
            }
        }
        try? await self.watch?.connection.close()
        self.watch = nil
    }

    /// Runs one fan-out step now (tests, with automatic fan-out off): false when nothing is left to expand.
    func expandOneBatch() async throws -> Bool {
        try await self.write { context in
            try await self.expandTopicMessage(in: context)
        }
    }

    // MARK: Transactions

    private func currentConnection() async throws(StoreError) -> PostgresConnectionWatch {
        if let watch = self.watch, !watch.connection.isClosed {
            return watch
        }
        self.watch = nil
        self.backend = nil
        if self.unreachableWhileClosing {
            throw StoreError.unavailable("PostgreSQL is unreachable and the store is closing")
        }
        self.connectionNumber += 1
        do {
            let (watch, backend) = try await Self.connect(self.context, id: 1000 + self.connectionNumber)
            (self.watch, self.backend) = (watch, backend)
            return watch
        } catch {
            if self.queue.isClosing { self.unreachableWhileClosing = true }
            throw error
        }
    }

    /// A new connection for the writer, watched, and the backend behind it (named within the connect timeout).
    static func connect(
        _ context: PostgresStoreContext, id: Int
    ) async throws(StoreError) -> (PostgresConnectionWatch, PostgresBackend) {
        let watch = PostgresConnectionWatch(connection: try await context.connect(id: id))
        let backend = try await PostgresBackend.of(
            watch, timeout: context.configuration.connectTimeout, logger: context.logger)
        return (watch, backend)
    }

    /// Closes the connection under a transaction that outlived its deadline (a PostgreSQL that stopped answering
    /// without closing the connection would hold the writer, and every caller, for ever): its statement fails as a
    /// lost connection (at the latest ``PostgresConnectionWatch/grace`` later), and the next request connects anew
    /// (within the connect timeout). Its backend is then ended from the read pool (``PostgresBackend``): closing
    /// the connection does not end a transaction that waits on a lock, which would keep the rows it locked from the
    /// next transactions. Returns what cancels it.
    ///
    /// A group's deadline is a timer on the connection's event loop, not a task: a task that sleeps costs every
    /// group two more hops through the cooperative pool (its start and its cancellation).
    private func watchdog(_ deadline: Deadline, for watch: PostgresConnectionWatch) -> @Sendable () -> Void {
        let logger = self.context.logger
        let (backend, client, timeout) = (self.backend, self.client, self.context.configuration.readTimeout)
        switch deadline {
        case .total(let limit):
            let connection = watch.connection
            let timer = connection.eventLoop.scheduleTask(in: TimeAmount(limit)) {
                logger.warning("PostgreSQL did not commit within \(limit); dropping the writer's connection")
                connection.close().whenComplete { _ in }
                Task { await backend?.terminate(client: client, timeout: timeout, logger: logger) }
            }
            return { timer.cancel() }
        case .perStatement(let limit):
            let task = Task {
                // Woken every `limit`: no statement answered since the last look means one has waited at least that
                // long (at most twice that).
                var answered = watch.answered
                while true {
                    try await Task.sleep(for: limit)
                    let now = watch.answered
                    if now == answered { break }
                    answered = now
                }
                logger.warning("PostgreSQL did not answer a statement within \(limit); dropping the writer's connection")
                try? await watch.connection.close()
                // Not in this task: the transaction's end cancels it.
                Task { await backend?.terminate(client: client, timeout: timeout, logger: logger) }
            }
            return { task.cancel() }
        }
    }

    /// `BEGIN`, `body`, the notification and `COMMIT`; afterwards the observers. Rolls back on error. Past its
    /// `deadline` the transaction has its connection closed under it (``watchdog(_:for:)``). With `pipelined`,
    /// `BEGIN` travels with the body's first statement (``PostgresWriteContext/beginPipelined()``), and the body may
    /// send its last statement with the `COMMIT` (``PostgresWriteContext/rowsThenCommit(_:)``): a group of sends is
    /// then two round trips to PostgreSQL, not four.
    private func transaction(
        counted: Bool = true,
        pipelined: Bool = false,
        deadline: Deadline,
        _ body: (PostgresWriteContext) async throws -> Void
    ) async throws(StoreError) -> PostgresWriteContext {
        let watch: PostgresConnectionWatch
        do {
            watch = try await self.currentConnection()
        } catch {
            self.context.health.failed(error)
            throw error
        }
        let connection = watch.connection
        let cancelWatchdog = self.watchdog(deadline, for: watch)
        defer { cancelWatchdog() }
        let write = PostgresWriteContext(
            watch: watch, logger: self.context.logger, nowMicros: self.context.nowMicros)
        var newEpoch: Int64?
        do {
            if pipelined {
                write.beginPipelined()
            } else {
                try await write.run("BEGIN")
            }
            try await body(write)
            let commitTime: Duration
            if let commit = write.commit {
                // The body's last statement carried the `COMMIT` (``PostgresWriteContext/rowsThenCommit(_:)``): it
                // announced its rows itself and changed no credentials, so nothing is left to send.
                assert(!write.authChanged && write.evictedDevices.isEmpty && write.appended.count == write.announced)
                _ = try await commit.answer.get()
                commitTime = ContinuousClock.now - commit.sent
            } else {
                let evicting = !write.authChanged && !write.evictedDevices.isEmpty
                if write.authChanged || evicting {
                    let epoch = try await write.rows(
                        "UPDATE meta SET value = value + 1 WHERE key = 'auth_epoch' RETURNING value")
                    newEpoch = try epoch.first?.decode(Int64.self)
                }
                // Appended rows are normally announced by the statement that wrote them (``flush``).
                let flag = write.authChanged ? "a" : evicting ? PostgresEvictionNotice.flag(write.evictedDevices, epoch: newEpoch) : "-"
                if flag != "-" || write.appended.count > write.announced,
                    let payload = self.notification(devices: write.appended.map(\.device), flag: flag)
                {
                    try await write.run("SELECT pg_notify(\(PostgresStoreContext.channel), \(payload))")
                }
                let start = ContinuousClock.now
                try await write.run("COMMIT")
                commitTime = ContinuousClock.now - start
            }
            if counted {
                self.context.statistics.withLockedValue {
                    $0.transactions += 1
                    $0.commitMicros += StoreContext.micros(commitTime)
                }
            }
        } catch {
            if PostgresStoreContext.isConnectionLost(error, connection: connection) {
                self.watch = nil
                try? await connection.close()
            } else {
                try? await write.run("ROLLBACK")
            }
            // Rows it numbered will not come through the notification connection: nothing waits for them.
            self.context.deliveryOrder.settleAll()
            let failure = PostgresStoreContext.storeError(error)
            self.context.health.failed(failure)
            throw failure
        }
        self.context.health.committed(provingCapacity: write.provesCapacity)
        if write.authChanged {
            self.context.authCache.invalidate(epoch: nil)
        } else if !write.evictedDevices.isEmpty {
            self.context.authCache.evict(devices: write.evictedDevices, epoch: newEpoch)
        }
        if write.topicMessageAdded {
            self.fanOutHint = true
        }
        // The appended rows reach this node's streams through the listener, in commit order with other nodes' rows
        // (``PostgresListener``), not from here.
        if !write.dropped.isEmpty, let observer = self.context.dropObserver.current {
            observer(write.dropped)
        }
        return write
    }

    /// The payload of the batch's one `NOTIFY`: `node auth-flag device,device,…` (`*` when the list would not fit
    /// in PostgreSQL's 8,000-byte limit), or nil when other nodes have nothing to learn. The auth flag is `-`, `a`
    /// (credentials changed: clear the cache) or an eviction list (``PostgresEvictionNotice``).
    private func notification(devices: [DeviceID], flag: String) -> String? {
        guard flag != "-" || !devices.isEmpty else { return nil }
        var seen = Set<Int64>()
        var list = ""
        for device in devices where seen.insert(device.rawValue).inserted {
            if !list.isEmpty { list += "," }
            list += String(device.rawValue)
            if list.utf8.count > 7_000 {
                list = "*"
                break
            }
        }
        return "\(self.context.node) \(flag) \(list.isEmpty ? "-" : list)"
    }

    private func runIsolated(_ request: PostgresIsolatedRequest) async {
        do {
            _ = try await self.transaction(deadline: .perStatement(self.context.configuration.statementTimeout)) {
                write in try await request.perform(write)
            }
            self.context.statistics.withLockedValue {
                $0.requests += 1
                $0.largestGroup = max($0.largestGroup, 1)
            }
            request.complete(nil)
        } catch {
            request.complete(error)
        }
    }

    private func runHotGroup(_ requests: [PostgresHotRequest]) async {
        var results: [PostgresHotRequest.Result] = []
        do {
            _ = try await self.transaction(
                pipelined: true, deadline: .total(self.context.configuration.commitTimeout)
            ) { write in
                results = try await self.applyHot(requests, in: write)
            }
        } catch {
            if requests.count > 1 && error.code != .closed && self.watch != nil {
                // One request may be the cause (or a deadlock with another node): each alone.
                self.context.statistics.withLockedValue { $0.groupFailures += 1 }
                for request in requests { await self.runHotGroup([request]) }
            } else {
                for request in requests { request.complete(.failure(error)) }
            }
            return
        }
        self.context.statistics.withLockedValue {
            $0.requests += requests.count
            $0.largestGroup = max($0.largestGroup, requests.count)
        }
        for (request, result) in zip(requests, results) {
            request.complete(.success(result))
        }
    }

    /// Applies a group of sends and acknowledgements in one queue batch.
    private func applyHot(
        _ requests: [PostgresHotRequest],
        in write: PostgresWriteContext
    ) async throws -> [PostgresHotRequest.Result] {
        if requests.allSatisfy({ if case .enqueue = $0.kind { false } else { true } }) {
            return try await self.applyAcknowledgements(requests, in: write)
        }
        var devices = Set<DeviceID>()
        for request in requests {
            switch request.kind {
            case .enqueue(let messages):
                for message in messages where message.timeToLive > .zero { devices.insert(message.device) }
            case .acknowledge(let device, _):
                devices.insert(device)
            case .acknowledgeUpTo(let device, _):
                devices.insert(device)
            }
        }
        var batch = try await self.loadBatch(devices: devices, in: write)
        enum Pending {
            case enqueued([PendingResult])
            case acknowledged(Int)
        }
        enum PendingResult {
            case provisional(Int64)
            case final(EnqueueResult)
        }
        var pending: [Pending] = []
        pending.reserveCapacity(requests.count)
        for request in requests {
            switch request.kind {
            case .enqueue(let messages):
                var results: [PendingResult] = []
                results.reserveCapacity(messages.count)
                for message in messages {
                    let ttl = StoreContext.micros(message.timeToLive)
                    if ttl <= 0 {
                        results.append(.final(.transient(self.nextTransientID(nowMicros: write.nowMicros))))
                    } else if let id = batch.append(
                        device: message.device, body: message.body, collapseKey: message.collapseKey,
                        expiresAt: write.nowMicros &+ ttl)
                    {
                        results.append(.provisional(id))
                    } else {
                        results.append(.final(.deviceNotFound))
                    }
                }
                pending.append(.enqueued(results))
            case .acknowledge(let device, let ids):
                pending.append(.acknowledged(batch.acknowledge(device: device, ids: ids)))
            case .acknowledgeUpTo(let device, let upTo):
                pending.append(.acknowledged(batch.acknowledge(device: device, upTo: upTo)))
            }
        }
        let base = try await self.flush(batch, in: write, committing: true)
        return pending.map { entry in
            switch entry {
            case .acknowledged(let count):
                return .acknowledged(count)
            case .enqueued(let results):
                return .enqueued(
                    results.map { result in
                        switch result {
                        case .final(let value): value
                        case .provisional(let id): .stored(MessageID(rawValue: Self.realID(id, base: base)))
                        }
                    })
            }
        }
    }

    /// A group of acknowledgements only: one `DELETE` of the acknowledged rows, without locking the devices or
    /// loading their queues (an acknowledgement needs no queue model). A node that only streams (its groups are
    /// acknowledgements) thus never holds the device locks that another node's sends wait for. A send that modelled
    /// a queue while an acknowledgement removed rows from it counts them once more at most (it may add a
    /// `deleted_messages` marker at the 100-message boundary a little early).
    private func applyAcknowledgements(
        _ requests: [PostgresHotRequest],
        in write: PostgresWriteContext
    ) async throws -> [PostgresHotRequest.Result] {
        var indexes: [Int64] = []
        var devices: [Int64] = []
        var upTo: [Int64] = []
        var listedRequests: [Int64] = []
        var listedIDs: [Int64] = []
        for (index, request) in requests.enumerated() {
            switch request.kind {
            case .acknowledge(let device, let ids):
                indexes.append(Int64(index))
                devices.append(device.rawValue)
                upTo.append(-1)
                for id in Set(ids.map(\.rowValue)) {
                    listedRequests.append(Int64(index))
                    listedIDs.append(id)
                }
            case .acknowledgeUpTo(let device, let id):
                indexes.append(Int64(index))
                devices.append(device.rawValue)
                upTo.append(id.rowValue)
            case .enqueue:
                preconditionFailure("applyAcknowledgements takes acknowledgements only")
            }
        }
        let rows = try await write.rowsThenCommit(
            """
            WITH requests AS (
                SELECT * FROM unnest(\(indexes)::int8[], \(devices)::int8[], \(upTo)::int8[])
                    AS r(request, device_id, up_to)
            ), listed AS (
                SELECT * FROM unnest(\(listedRequests)::int8[], \(listedIDs)::int8[]) AS l(request, id)
            ), removed AS (
                DELETE FROM messages AS m USING requests AS r
                WHERE m.device_id = r.device_id
                    AND (m.id <= r.up_to OR m.id IN (SELECT l.id FROM listed AS l WHERE l.request = r.request))
                RETURNING r.request
            )
            SELECT request, count(*) FROM removed GROUP BY request
            """
        )
        var counts = [Int](repeating: 0, count: requests.count)
        for row in rows {
            let (index, count) = try row.decode((Int64, Int64).self)
            counts[Int(index)] = Int(count)
        }
        return counts.map { .acknowledged($0) }
    }

    var batchSize: Int { self.context.configuration.fanOutBatchSize }

    var conditionCompiler: @Sendable (String) -> TopicConditionMatcher? { self.context.configuration.conditionCompiler }

    private static func realID(_ provisional: Int64, base: Int64) -> Int64 {
        base + (provisional - PostgresQueueBatch.provisionalBase)
    }

    private func nextTransientID(nowMicros: Int64) -> MessageID {
        MessageID(rawValue: self.context.ids.withLockedValue { $0.next(nowMicros: nowMicros) })
    }

    /// Locks the devices (in id order, so that nodes never deadlock on each other) and loads their queues, in one
    /// round trip (`pushrelay_lock_queues`, schema 4). The rows are read by a statement that starts after the
    /// locks are held, so they include every commit made before by another node.
    func loadBatch(devices: Set<DeviceID>, in write: PostgresWriteContext) async throws -> PostgresQueueBatch {
        var batch = PostgresQueueBatch(
            policy: self.context.configuration.queuePolicy,
            nowMicros: write.nowMicros,
            markerTimeToLive: StoreContext.micros(self.context.configuration.deletedMessagesTimeToLive)
        )
        guard !devices.isEmpty else { return batch }
        let ids = devices.map(\.rawValue).sorted()
        for row in try await write.rows("SELECT * FROM pushrelay_lock_queues(\(ids))") {
            let (device, id, kind, collapseKey, expiresAt) = try row.decode(
                (Int64, Int64?, Int16?, String?, Int64?).self)
            if let id, let kind, let expiresAt {
                batch.load(
                    device: DeviceID(rawValue: device), id: id, kind: kind, collapseKey: collapseKey,
                    expiresAt: expiresAt)
            } else {
                batch.load(device: DeviceID(rawValue: device))
            }
        }
        return batch
    }

    /// Writes a batch in one statement: the id block, the deletions, the insertions and the `NOTIFY` of the devices
    /// that got rows and the ids they got, `node - devices first last` (sent by PostgreSQL at commit; one round
    /// trip fewer than a statement of its own; other nodes read exactly these rows back). Returns the
    /// id base (real id = base + provisional offset) and records the appended rows on `write`. With `committing`
    /// (the transaction's last statement), the statement carries the `COMMIT`.
    @discardableResult
    func flush(
        _ batch: PostgresQueueBatch, in write: PostgresWriteContext, committing: Bool = false
    ) async throws -> Int64 {
        guard !batch.isEmpty else { return 0 }
        write.dropped.add(batch.dropped)
        let deletions = batch.deletions
        let cleared = batch.clearedDevices.map(\.rawValue)
        let count = batch.provisionalCount
        guard count > 0 else {
            let statement: PostgresQuery = """
                WITH removed AS (DELETE FROM messages WHERE id = ANY(\(deletions)))
                DELETE FROM messages WHERE device_id = ANY(\(cleared)) AND collapse_key IS NULL
                """
            _ = try await committing ? write.rowsThenCommit(statement) : write.rows(statement)
            return 0
        }
        let rows = batch.insertions
        let offsets = rows.map { $0.id - PostgresQueueBatch.provisionalBase }
        let devices = rows.map(\.device.rawValue)
        let kinds = rows.map { Int64($0.row.kind) }
        let hasKey = rows.map { $0.row.collapseKey != nil }
        let keys = rows.map { $0.row.collapseKey ?? "" }
        let expiries = rows.map(\.row.expiresAt)
        let bodies = rows.map { ByteBuffer(bytes: $0.row.body) }
        // Past the transient ids this node handed out too, so that they stay in sequence with stored ones.
        let floor = self.context.ids.withLockedValue { max(write.nowMicros, $0.last + 1) }
        let payload = self.notification(devices: rows.map(\.device), flag: "-") ?? ""
        let statement: PostgresQuery = """
            WITH block AS (
                UPDATE meta SET value = greatest(value + \(count), \(floor) + \(count) - 1)
                WHERE key = 'last_message_id' RETURNING value - \(count) AS base
            ), removed AS (
                DELETE FROM messages WHERE id = ANY(\(deletions))
            ), cleared AS (
                DELETE FROM messages WHERE device_id = ANY(\(cleared)) AND collapse_key IS NULL
            ), inserted AS (
                INSERT INTO messages (id, device_id, kind, collapse_key, expires_at, body)
                SELECT block.base + r.offset_id, r.device_id, r.kind::smallint,
                    CASE WHEN r.has_key THEN r.collapse_key END, r.expires_at, r.body
                FROM block, unnest(\(offsets)::int8[], \(devices)::int8[], \(kinds)::int8[], \(hasKey)::bool[],
                    \(keys)::text[], \(expiries)::int8[], \(bodies)::bytea[])
                    AS r(offset_id, device_id, kind, has_key, collapse_key, expires_at, body)
            ), announced AS (
                SELECT pg_notify(
                    \(PostgresStoreContext.channel),
                    \(payload) || ' ' || (block.base + 1)::text || ' ' || (block.base + \(count))::text)
                FROM block
            )
            SELECT base FROM block, announced
            """
        let result = try await committing ? write.rowsThenCommit(statement) : write.rows(statement)
        guard let first = result.first else {
            throw StoreError(code: .corrupt, message: "meta.last_message_id is missing")
        }
        let base = try first.decode(Int64.self)
        self.context.ids.withLockedValue { $0.advance(past: base + count) }
        self.context.deliveryOrder.took(upTo: base + count)
        defer { write.announced = write.appended.count }
        for (id, device, row) in rows {
            write.appended.append(
                StoredMessage(
                    id: MessageID(rawValue: Self.realID(id, base: base)), device: device,
                    kind: row.kind == 1 ? .deletedMessages : .message, body: row.body,
                    collapseKey: row.collapseKey, expiresAtMicros: row.expiresAt))
        }
        return base
    }

    // MARK: Fan-out

    /// One step of the oldest topic message no other node is expanding; false when there is none.
    private func runFanOutStep() async -> Bool {
        var found = false
        do {
            // An empty look (the poll found nothing) is not a group.
            _ = try await self.transaction(
                counted: false, deadline: .perStatement(self.context.configuration.statementTimeout)
            ) { write in
                found = try await self.expandTopicMessage(in: write)
            }
            if found { self.context.statistics.withLockedValue { $0.transactions += 1 } }
            return found
        } catch {
            self.context.logger.error(
                "topic fan-out batch failed; retrying at the next poll", metadata: ["relay.error": "\(error)"])
            return false
        }
    }
}
