import ArgumentParser

@main
struct PushRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushrelay",
        abstract: "FCM-compatible push notification relay.",
        subcommands: [ListenCommand.self]
    )
}
