import Foundation
import TestSupport
import Testing
@testable import PushRelayStore

/// ``PostgresURL``: what a libpq URL may say, what is refused, and that `?application_name=` reaches PostgreSQL.
@Suite struct PostgresURLTests {
    @Test("defaults: user postgres, port 5432, the database named after the user, application pushrelay")
    func defaults() throws {
        let url = try PostgresURL("postgres://relay@db")
        #expect(url.user == "relay" && url.host == "db" && url.port == 5432 && url.database == "relay")
        #expect(url.applicationName == "pushrelay")
        #expect(url.socketPath == nil)
        #expect(url.description == "postgres://relay@db:5432/relay")
    }

    @Test("a socket directory and an application name; the description masks the password and keeps both")
    func parameters() throws {
        let url = try PostgresURL("postgresql://relay:hunter2@/relay?host=/run/postgresql&application_name=node-a")
        #expect(url.socketPath == "/run/postgresql/.s.PGSQL.5432")
        #expect(url.applicationName == "node-a")
        #expect(url.description == "postgres://relay:****@:5432/relay?host=/run/postgresql&application_name=node-a")
        #expect(try PostgresURL("postgres://h/d?application_name=a%20b").applicationName == "a b")
        let longest = String(repeating: "n", count: 63)
        #expect(try PostgresURL("postgres://h/d?application_name=" + longest).applicationName == longest)
    }

    @Test("an application name that PostgreSQL would cut or change is refused", arguments: [
        "postgres://h/d?application_name=", "postgres://h/d?application_name",
        "postgres://h/d?application_name=" + String(repeating: "n", count: 64),
        "postgres://h/d?application_name=n%C3%B6de", "postgres://h/d?application_name=a%0Ab",
    ])
    func refusedNames(_ text: String) throws {
        let error = #expect(throws: StoreError.self) { try PostgresURL(text) }
        #expect(error?.message == "application_name is 1 to 63 printable ASCII characters")
    }

    @Test("unknown parameters and TLS modes are refused")
    func refusedParameters() {
        #expect(throws: StoreError.self) { try PostgresURL("postgres://h/d?connect_timeout=3") }
        #expect(throws: StoreError.self) { try PostgresURL("postgres://h/d?sslmode=require") }
        #expect(throws: StoreError.self) { try PostgresURL("mysql://h/d") }
    }

    /// Every connection the store opens — the writer's and the read pool's — names itself as the URL says: two nodes
    /// of one database can be told apart in `pg_stat_activity`.
    @Test func applicationNameReachesPostgreSQL() async throws {
        let postgres = try await TestPostgres.shared
        let (database, url) = try await postgres.namedFreshDatabase("appname")
        let store = try await PostgresStore.open(
            configuration: PostgresStore.Configuration(url: try PostgresURL(url + "?application_name=node_a")))
        _ = try await store.createProject(name: "shop")  // the writer
        #expect(try await store.projects().map(\.name) == ["shop"])  // the read pool
        func sessions(_ name: String) async throws -> String {
            try await postgres.psql(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = '\(name)'",
                database: database
            ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let named = try #require(Int(try await sessions("node_a")))
        #expect(named >= 2, "the writer's and the read pool's connections")
        #expect(try await sessions("pushrelay") == "0")
        await store.close()
    }
}
