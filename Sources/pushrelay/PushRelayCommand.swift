import ArgumentParser

@main
struct PushRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushrelay",
        abstract: "FCM-compatible push notification relay.",
        subcommands: [
            ServeCommand.self, ProjectCommand.self, ListenCommand.self, CheckConfigCommand.self,
            StoreCommand.self, StoreDebugCommand.self, RegisterCommand.self, SendCommand.self,
        ]
    )
}
