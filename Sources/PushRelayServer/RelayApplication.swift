public import Logging
public import PushRelayHTTP
public import PushRelayStore
import HTTPTypes
import NIOCore
import PushRelayCore
import PushRelayWire

/// The relay: its routes over the transport, the live-stream registry, and the periodic work (heartbeats, purge).
///
/// Build one per process with an opened store, hand ``router`` to the HTTP server, and run ``run()`` (or the
/// ``services``) for as long as the server serves.
public final class RelayApplication: Sendable {
    /// What the relay needs to know beyond the store.
    public struct Options: Sendable {
        /// How often an idle stream gets a heartbeat comment. Default 25 s (below common 30 s proxy timeouts).
        public var heartbeatInterval: Duration = .seconds(25)
        /// The largest `/fcm/send` body. Default 256 KiB: 1000 tokens of ~160 bytes plus a 4 KiB payload.
        public var maxSendBodyBytes: Int = 256 * 1024
        /// `Retry-After` seconds sent with `Unavailable`. Default 10.
        public var retryAfterSeconds: Int = 10
        /// How often expired and acknowledged messages are purged. Default 60 s.
        public var purgeInterval: Duration = .seconds(60)
        /// The largest body on every route but the sends (register, ack, Instance ID, device groups),
        /// `max_request_body_size`.
        /// Default 256 KiB.
        public var maxRequestBodyBytes: Int = 256 * 1024
        /// Whether `/metrics` is served (`metrics_enabled`); when false the route does not exist (404).
        public var metricsEnabled: Bool = true
        /// How often the store's figures behind `/metrics` (queue depth) and `/readyz` (store readable) are
        /// refreshed (`metrics_interval`); neither route reads the store itself. Default 10 s.
        public var statisticsInterval: Duration = .seconds(10)
        /// Web origins allowed to call the device routes from a browser (CORS); `*` for any. Default none.
        public var corsAllowedOrigins: [String] = []
        /// The public base URL (`public_url`): `/token` accepts JWTs whose audience is `<publicURL>/token`.
        /// ``RelayApplication/publicURL`` can change it once the listeners are bound.
        public var publicURL: String = "http://127.0.0.1:8080"
        /// Messages one device may be sent per minute, as a burst refilled at that rate (`device_message_rate`);
        /// beyond it a recipient answers `DeviceMessageRateExceeded` (v1: `QUOTA_EXCEEDED`). 0: no quota.
        public var deviceMessageRate: Int = 240
        /// Messages one topic (or condition) of a project may be sent per minute (`topic_message_rate`); beyond it
        /// the send answers `TopicsMessageRateExceeded` (v1: `QUOTA_EXCEEDED`). 0: no quota.
        public var topicMessageRate: Int = 600
        /// Messages one project may send per minute, one per recipient (`project_message_rate`); beyond it the whole
        /// send answers `429 QuotaExceeded` (v1: `QUOTA_EXCEEDED`) with `Retry-After`. 0: no quota.
        public var projectMessageRate: Int = 600_000
        /// Devices one project may register per minute (`registration_rate`); beyond it `POST /v1/register`
        /// answers `429 RESOURCE_EXHAUSTED` with `Retry-After`. 0: no quota.
        public var registrationRate: Int = 6000
        /// Devices one IP address may register per minute (`registration_rate_per_address`). 0: no quota.
        public var registrationRatePerAddress: Int = 300
        /// Devices one project may have registered at once (`max_devices_per_project`). 0: no limit.
        public var maxDevicesPerProject: Int = 1_000_000
        /// Access tokens `/token` grants one service-account key per minute, as a burst refilled at that rate;
        /// beyond it the grant answers `429 rate_limit_exceeded` with `Retry-After`. Not a configuration setting: a
        /// guard (every grant stores a row for an hour), far above what senders need (a token lasts an hour and
        /// google-auth reuses it until then). Tests lower it.
        public var accessTokensPerKeyPerMinute: Int = 600
        /// Devices unseen this long are removed at the purge (`device_expiry`); nil keeps them forever.
        public var deviceExpiry: Duration? = .seconds(270 * 86_400)

        public init() {}
    }

    let store: any PushStore
    let hub = DeliveryHub()
    /// Answers and deliveries from the store's writer to the event loops, one wake-up per loop per batch.
    let handoff = EventLoopHandoff()
    let options: Options
    let logger: Logger
    /// The relay's metrics; the daemon records TLS handshakes through it.
    public let metrics: RelayMetrics
    let readiness: Readiness
    let snapshot: StoreStatisticsSnapshot
    /// Devices seen (stream opened, acknowledgement) since the purge loop last recorded them, for device expiry.
    let sightings = DeviceSightings()

    /// The routes: FCM send, device groups, device, Instance ID and operations.
    public let router: HTTPRouter
    /// The public base URL that `/token` checks audiences against; set it once the listeners are bound when
    /// `public_url` is not configured.
    public let publicURL: PublicURL

    /// The relay on an opened store. `exporter` renders `/metrics`; the relay's metrics are recorded through its
    /// factory (bootstrap the process-wide metrics system with it to export other libraries' metrics too).
    public init(
        store: any PushStore,
        options: Options = Options(),
        exporter: PrometheusExporter = PrometheusExporter(),
        logger: Logger
    ) {
        self.store = store
        self.options = options
        self.logger = logger
        let metrics = RelayMetrics(factory: exporter.factory)
        self.metrics = metrics
        let readiness = Readiness()
        self.readiness = readiness
        let hub = self.hub
        let handoff = self.handoff
        let snapshot = StoreStatisticsSnapshot()
        self.snapshot = snapshot
        let publicURL = PublicURL(options.publicURL)
        self.publicURL = publicURL
        self.router = Self.makeRouter(
            store: store, hub: hub, handoff: handoff, options: options, metrics: metrics, exporter: exporter,
            readiness: readiness, snapshot: snapshot, publicURL: publicURL, sightings: self.sightings, logger: logger)
        store.setCommitObserver { committed in hub.deliver(committed) }
        store.setDropObserver { dropped in metrics.dropped(dropped) }
        // Rows committed on PostgreSQL, by any node this one included, in commit order: to the devices' streams here,
        // read back only for the devices streaming here.
        store.setLocalStreams { devices in hub.streaming(among: devices) }
        store.setRemoteCommitObserver { commit in
            switch commit {
            case .rows(let rows): hub.deliver(rows)
            case .devices(let devices): hub.wake(devices: devices)
            case .unknown: hub.wakeAll()
            case .streamAnnounced(let device, let attachment): hub.announced(device: device, attachment: attachment)
            case .streamOpenedElsewhere(let device):
                if hub.openedElsewhere(device: device) {
                    logger.debug("stream ended: the device opened a newer one on another node",
                                 metadata: ["relay.device.id": "\(device.rawValue)"])
                }
            }
        }
    }

    static func makeRouter(
        store: any PushStore,
        hub: DeliveryHub,
        handoff: EventLoopHandoff,
        options: Options,
        metrics: RelayMetrics,
        exporter: PrometheusExporter,
        readiness: Readiness,
        snapshot: StoreStatisticsSnapshot,
        publicURL: PublicURL,
        sightings: DeviceSightings,
        logger: Logger
    ) -> HTTPRouter {
        let router = HTTPRouter()
        router.translateErrors(RouteErrors.storeUnavailable(retryAfterSeconds: options.retryAfterSeconds))
        let dispatcher = SendDispatcher(
            store: store, path: MessagePath(store: store, hub: hub, metrics: metrics, handoff: handoff),
            metrics: metrics,
            quotas: SendQuotas(
                devicePerMinute: options.deviceMessageRate, topicPerMinute: options.topicMessageRate,
                projectPerMinute: options.projectMessageRate))
        let send = SendRoute(
            store: store, dispatcher: dispatcher, metrics: metrics, logger: logger,
            maxBodyBytes: options.maxSendBodyBytes, retryAfterSeconds: options.retryAfterSeconds,
            readiness: readiness)
        router.add(.post, "/fcm/send", maxBodyBytes: options.maxSendBodyBytes, gate: send.gate, .promised(send.handle))
        router.add(.post, "/gcm/send", maxBodyBytes: options.maxSendBodyBytes, gate: send.gate, .promised(send.handle))
        // FCM's device groups: create, add and remove (POST), the key of a name (GET); sends go to /fcm/send.
        let groups = DeviceGroupRoutes(store: store, logger: logger, maxBodyBytes: options.maxRequestBodyBytes)
        for path in ["/fcm/notification", "/gcm/notification"] {
            router.add(.post, path, maxBodyBytes: options.maxRequestBodyBytes, errors: RouteErrors.json, .collected(groups.change))
            router.add(.get, path, maxBodyBytes: 0, errors: RouteErrors.json, .collected(groups.lookUp))
        }

        // FCM HTTP v1: the service accounts' token endpoint and everything under /v1/projects/.
        let token = TokenRoute(
            store: store, publicURL: publicURL, grants: RateLimiter(perMinute: options.accessTokensPerKeyPerMinute),
            logger: logger)
        router.add(.post, "/token", maxBodyBytes: 64 * 1024, errors: RouteErrors.oauth, .collected(token.handle))
        let v1 = V1ProjectRoutes(
            store: store, dispatcher: dispatcher, metrics: metrics,
            logger: logger, retryAfterSeconds: options.retryAfterSeconds, maxBodyBytes: options.maxSendBodyBytes,
            readiness: readiness)
        for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
            router.add(
                method, "/v1/projects/{path*}", maxBodyBytes: options.maxSendBodyBytes, gate: v1.gate,
                errors: RouteErrors.v1, .promised(v1.handle))
            router.add(
                method, "/v1/projects", maxBodyBytes: options.maxSendBodyBytes, errors: RouteErrors.v1,
                .promised(v1.handle))
        }

        let devices = DeviceRoutes(
            store: store, hub: hub, handoff: handoff, metrics: metrics, logger: logger,
            maxBodyBytes: options.maxRequestBodyBytes,
            registrationQuotas: RegistrationQuotas(
                perProject: options.registrationRate, perAddress: options.registrationRatePerAddress),
            maxDevicesPerProject: options.maxDevicesPerProject, sightings: sightings)
        let tickets = StreamTicketRoutes(store: store, devices: devices, logger: logger)
        let cors = CORSPolicy(allowedOrigins: options.corsAllowedOrigins)
        let deviceErrors = cors.errors(RouteErrors.json)
        router.add(.post, "/v1/register", maxBodyBytes: options.maxRequestBodyBytes, errors: deviceErrors, .collected(cors.wrap(devices.register)))
        router.add(.delete, "/v1/register", maxBodyBytes: options.maxRequestBodyBytes, errors: deviceErrors, .collected(cors.wrap(devices.unregister)))
        router.add(.get, "/v1/stream", maxBodyBytes: 0, errors: deviceErrors, .promised(cors.wrap(tickets.stream)))
        router.add(.post, "/v1/ack", maxBodyBytes: options.maxRequestBodyBytes, errors: deviceErrors, .promised(cors.wrap(devices.acknowledge)))
        router.add(.post, "/v1/stream-ticket", maxBodyBytes: options.maxRequestBodyBytes, errors: deviceErrors, .collected(cors.wrap(tickets.issue)))
        let deviceRoutes: [(path: String, methods: [HTTPRequest.Method])] = [
            ("/v1/register", [.post, .delete]), ("/v1/stream", [.get]), ("/v1/ack", [.post]), ("/v1/stream-ticket", [.post]),
        ]
        for route in deviceRoutes {
            router.add(.options, route.path, maxBodyBytes: 0, errors: deviceErrors, .collected(cors.preflight(allowing: route.methods)))
        }

        let iid = InstanceIDRoutes(store: store, logger: logger, maxBodyBytes: options.maxRequestBodyBytes)
        router.add(.post, "/iid/v1/{token}/rel/topics/{topic}", maxBodyBytes: 4096, errors: RouteErrors.json, .collected { try await iid.relation($0, subscribe: true) })
        router.add(.delete, "/iid/v1/{token}/rel/topics/{topic}", maxBodyBytes: 4096, errors: RouteErrors.json, .collected { try await iid.relation($0, subscribe: false) })
        router.add(.post, "/iid/v1:batchAdd", maxBodyBytes: options.maxRequestBodyBytes, errors: RouteErrors.json, .collected { try await iid.batch($0, subscribe: true) })
        router.add(.post, "/iid/v1:batchRemove", maxBodyBytes: options.maxRequestBodyBytes, errors: RouteErrors.json, .collected { try await iid.batch($0, subscribe: false) })
        router.add(.get, "/iid/info/{token}", maxBodyBytes: 0, errors: RouteErrors.json, .collected(iid.info))
        router.add(.post, "/v1/topics/{topic}", maxBodyBytes: 4096, errors: RouteErrors.json, .collected { try await iid.deviceRelation($0, subscribe: true) })
        router.add(.delete, "/v1/topics/{topic}", maxBodyBytes: 4096, errors: RouteErrors.json, .collected { try await iid.deviceRelation($0, subscribe: false) })

        let operations = OperationsRoutes(exporter: exporter, readiness: readiness, snapshot: snapshot, store: store)
        router.add(.get, "/healthz", maxBodyBytes: 0, .immediate { _, _ in OperationsRoutes.healthy })
        router.add(.get, "/readyz", maxBodyBytes: 0, .collected(operations.ready))
        if options.metricsEnabled {
            router.add(.get, "/metrics", maxBodyBytes: 0, .collected(operations.metrics))
        }
        return router
    }

    /// Takes the first statistics snapshot (before ``markReady()``, so `/readyz` and `/metrics` have figures at once).
    public func refreshStatistics() async { await snapshot.refresh(store: store, metrics: metrics) }

    /// Marks the relay ready (listeners bound, store open) for `/readyz`.
    public func markReady() { readiness.set(.ready) }

    /// Graceful shutdown, first step: `/readyz` fails, every live stream ends (clients reconnect elsewhere) and new
    /// ones end at once.
    public func drain() {
        readiness.set(.draining)
        hub.drain()
    }

    /// Runs the periodic work (heartbeats, purge, statistics) until cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.heartbeatLoop() }
            group.addTask { await self.purgeLoop() }
            group.addTask { await self.statisticsLoop() }
        }
    }

    /// One snapshot per interval however many clients read `/metrics` and `/readyz`.
    private func statisticsLoop() async {
        while !Task.isCancelled {
            await snapshot.refresh(store: store, metrics: metrics)
            // While the store cannot commit, find out whether it can again (sends may have stopped coming: the
            // failing /readyz took the node out of rotation).
            if store.commitFailure != nil { try? await store.probeCommit() }
            do { try await Task.sleep(for: options.statisticsInterval) } catch { return }
        }
    }

    /// Every `heartbeat_interval`: a heartbeat on every stream, and the end of the streams whose device no longer
    /// exists — removed by another process (`pushrelay project delete`), another node, or device expiry; this
    /// node's own unregistrations end their stream at once.
    private func heartbeatLoop() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: options.heartbeatInterval) } catch { return }
            hub.heartbeat()
            await endStreamsOfRemovedDevices()
        }
    }

    private func endStreamsOfRemovedDevices() async {
        let connected = hub.connectedDeviceIDs
        guard !connected.isEmpty else { return }
        do {
            let existing = try await store.existingDevices(connected)
            let removed = connected.filter { !existing.contains($0) }
            if !removed.isEmpty {
                logger.info("ending the streams of removed devices", metadata: ["relay.devices": "\(removed.count)"])
                hub.end(devices: removed)
            }
        } catch {
            logger.warning("could not check the devices holding streams", metadata: ["relay.error": "\(error)"])
        }
    }

    private func purgeLoop() async {
        var lastSweep = ContinuousClock.now
        while !Task.isCancelled {
            do { try await Task.sleep(for: options.purgeInterval) } catch { return }
            do {
                // Up to a million expired messages a round, 10,000 a pass.
                try await store.purgeCatchingUp(batch: 10_000, maxPasses: 100) { metrics.purged($0) }
            } catch {
                logger.warning("purge failed", metadata: ["relay.error": "\(error)"])
            }
            guard let expiry = options.deviceExpiry else {
                _ = sightings.take()
                continue
            }
            // Devices seen since the last round, and now and then every device holding a stream (a stream may stay
            // open for weeks without an acknowledgement): device_expiry then removes only devices that are gone.
            var seen = sightings.take()
            if ContinuousClock.now - lastSweep >= min(.seconds(86_400), expiry / 4) {
                seen += hub.connectedDeviceIDs
                lastSweep = ContinuousClock.now
            }
            do {
                for start in stride(from: 0, to: seen.count, by: 500) {
                    try await store.recordDevicesSeen(Array(seen[start..<min(start + 500, seen.count)]))
                }
                let removed = try await store.expireDevices(unseenFor: expiry, limit: 10_000)
                if removed > 0 {
                    logger.info("expired devices unseen for device_expiry", metadata: ["relay.devices": "\(removed)"])
                }
            } catch {
                logger.warning("device expiry failed", metadata: ["relay.error": "\(error)"])
            }
        }
    }
}
