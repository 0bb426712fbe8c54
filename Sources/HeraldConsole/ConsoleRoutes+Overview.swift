import Foundation
import HeraldStore
import Hummingbird

extension ConsoleRoutes {
    func registerOverview(on console: RouterGroup<Context>) {
        console.get { request, _ in
            let session = try await requireSession(request)
            let overview = try await overview.overview()
            let chart = HourlyChart(sends: overview.sendsByHour, pushes: overview.pushesByHour)
            return page(
                "overview",
                title: "Overview",
                section: .overview,
                session: session,
                values: [
                    "users": overview.users, "devices": overview.devices, "channels": overview.channels,
                    "sends": overview.sendsByHour.reduce(0, +), "pushes": overview.pushesByHour.reduce(0, +),
                    "pushFailures": overview.pushFailures, "chart": chart.svg,
                    "databaseVersion": overview.databaseVersion,
                    "databaseSize": ByteCountFormatter.string(fromByteCount: overview.databaseBytes, countStyle: .binary),
                    "migrations": overview.migrations,
                    "credentials": overview.credentials.map { credential -> [String: Any] in
                        [
                            "name": credential.name, "kind": credential.kind, "environment": credential.environment, "topic": credential.topic,
                            "expires": credential.certificateExpiresAt.map(Self.day) ?? "—",
                            "expiring": credential.certificateExpiresAt.map { $0.timeIntervalSinceNow < 30 * 86_400 } ?? false,
                        ]
                    },
                    "noCredentials": overview.credentials.isEmpty,
                ]
            )
        }
    }

    static func day(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day())
    }
}
