import PushRelayStore

/// The project a send route's gate found for the request's credential (a server key, an access token) in memory,
/// handed to the handler as ``PushRelayHTTP/HTTPServerRequest/admission``, so that it does not look it up again.
final class AdmittedProject: Sendable {
    let project: Project

    init(project: Project) {
        self.project = project
    }
}
