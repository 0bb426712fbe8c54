import HeraldConsole
import HeraldCore
import HeraldServices
import HeraldStore
import Hummingbird
import HummingbirdCore
import Logging
import Postgres
import Prometheus
import ServiceLifecycle
import WebPush

/// Builds Herald's router and HTTP application from its parts.
public enum HeraldApplication {
    /// Everything the routes need.
    public struct Dependencies: Sendable {
        public var client: PostgresClient
        public var migrator: Migrator
        public var metricsRegistry: PrometheusCollectorRegistry
        /// The bearer token admin routes accept; `nil` refuses them all.
        public var adminToken: String?
        /// Signalled after an `audience: "all"` send, to wake the `FanoutService`.
        public var fanoutWake: WakeSignal
        /// Signalled after an erasure starts, to wake the `ErasureService`.
        public var erasureWake: WakeSignal
        /// Signalled after a send is scheduled, to wake the `SchedulerService`.
        public var scheduleWake = WakeSignal()
        public var sync: SyncSettings
        /// Seals APNs secrets; `nil` refuses credential uploads (503).
        public var secrets: SecretBox?
        /// Live streams; `nil` serves HTTP only (`GET /v1/me/stream` then never upgrades).
        public var hub: LiveHub?
        /// Rate limits; off unless given (`herald serve` passes its configured ones).
        public var limits: RequestLimits
        /// The admin console's pages; `nil` serves no `/console`.
        public var console: ConsoleSite?
        /// The hot standby that sync reads go to; `nil` reads everything on `client`.
        public var replica: ReadReplica?
        /// Answers quiet polls and session checks from memory; `nil` asks the database every time.
        /// Fed by the hub's listener, so it needs a hub with one.
        public var notifier: ChangeNotifier?
        /// The push services browsers' subscriptions may name (`HERALD_WEBPUSH_HOSTS`).
        public var webPushHosts: WebPushHosts = .browsers
        /// The origins whose pages may call the user routes (`HERALD_CORS_ORIGINS`).
        public var crossOrigin: CrossOriginPolicy = .sameOriginOnly
        /// The web client's modules, served at `/client/`; `nil` serves none.
        public var clientFiles: ClientFiles?

        public init(
            client: PostgresClient,
            migrator: Migrator,
            metricsRegistry: PrometheusCollectorRegistry,
            adminToken: String?,
            fanoutWake: WakeSignal = WakeSignal(),
            erasureWake: WakeSignal = WakeSignal(),
            sync: SyncSettings = SyncSettings(),
            secrets: SecretBox? = nil,
            hub: LiveHub? = nil,
            limits: RequestLimits = RequestLimits(.off),
            console: ConsoleSite? = nil,
            replica: ReadReplica? = nil,
            notifier: ChangeNotifier? = nil
        ) {
            self.client = client
            self.migrator = migrator
            self.metricsRegistry = metricsRegistry
            self.adminToken = adminToken
            self.fanoutWake = fanoutWake
            self.erasureWake = erasureWake
            self.sync = sync
            self.secrets = secrets
            self.hub = hub
            self.limits = limits
            self.console = console
            self.replica = replica
            self.notifier = notifier
        }
    }

    /// The router with every route and middleware, and the list of routes it serves.
    public static func buildRouter(_ dependencies: Dependencies) -> (router: Router<HeraldRequestContext>, routes: [RouteDescription]) {
        let (router, routes, _) = buildRouters(dependencies)
        return (router, routes)
    }

    /// The router, its routes, and the stream controller the WebSocket upgrade consults.
    static func buildRouters(
        _ dependencies: Dependencies
    ) -> (
        router: Router<HeraldRequestContext>, routes: [RouteDescription], streams: LiveController
    ) {
        let router = Router(context: HeraldRequestContext.self)
        router.add(middleware: RequestMetricsMiddleware())
        router.add(middleware: RequestLogMiddleware(level: .debug))
        let crossOriginRoutes = CrossOriginRoutes()
        router.add(middleware: CrossOriginMiddleware(policy: dependencies.crossOrigin, routes: crossOriginRoutes))
        router.add(middleware: ErrorMiddleware())
        let sessions = SessionStore(client: dependencies.client)
        let registry = RouteRegistry(
            router: router,
            authenticator: Authenticator(adminToken: dependencies.adminToken, sessions: sessions, notifier: dependencies.notifier),
            limits: dependencies.limits,
            replica: dependencies.replica,
            crossOrigin: crossOriginRoutes
        )
        OperationsController(migrator: dependencies.migrator, metricsRegistry: dependencies.metricsRegistry)
            .register(in: registry)
        let users = UsersController(
            users: UserStore(client: dependencies.client),
            sessions: sessions,
            erasures: UserErasureStore(client: dependencies.client),
            exports: UserExportStore(client: dependencies.client),
            erasureWake: dependencies.erasureWake
        )
        users.register(in: registry)
        ChannelsController(channels: ChannelStore(client: dependencies.client))
            .register(in: registry)
        let topics = TopicsController(topics: TopicStore(client: dependencies.client))
        topics.register(in: registry)
        TemplatesController(templates: TemplateStore(client: dependencies.client))
            .register(in: registry)
        let notifications = notificationsController(dependencies)
        notifications.register(in: registry)
        let schedules = ScheduledSendsController(
            schedules: ScheduleStore(client: dependencies.client),
            notifications: notifications,
            wake: dependencies.scheduleWake
        )
        schedules.register(in: registry)
        CollectionController(
            collections: CollectionStore(client: dependencies.client),
            users: UserStore(client: dependencies.client),
            settings: SettingsStore(client: dependencies.client),
            sync: dependencies.sync,
            push: PushStore(client: dependencies.client),
            devices: DeviceStore(client: dependencies.client),
            sessions: sessions,
            notifier: dependencies.notifier
        ).register(in: registry)
        DevicesController(devices: DeviceStore(client: dependencies.client), webPushHosts: dependencies.webPushHosts)
            .register(in: registry)
        let apns = APNsController(
            credentials: dependencies.secrets.map { APNsCredentialStore(client: dependencies.client, box: $0) },
            push: PushStore(client: dependencies.client)
        )
        apns.register(in: registry)
        let fcm = FCMController(credentials: dependencies.secrets.map { FCMCredentialStore(client: dependencies.client, box: $0) })
        fcm.register(in: registry)
        let webPush = WebPushController(settings: SettingsStore(client: dependencies.client), secrets: dependencies.secrets)
        webPush.register(in: registry)
        ReceiptsController(collections: CollectionStore(client: dependencies.client))
            .register(in: registry)
        WebhooksController(webhooks: dependencies.secrets.map { WebhookStore(client: dependencies.client, box: $0) })
            .register(in: registry)
        PushPreferencesController(
            preferences: PushPreferenceStore(client: dependencies.client),
            collections: CollectionStore(client: dependencies.client)
        ).register(in: registry)
        CategoryPreferencesController(
            preferences: CategoryPreferenceStore(client: dependencies.client),
            collections: CollectionStore(client: dependencies.client),
            channels: ChannelStore(client: dependencies.client)
        ).register(in: registry)
        let stream = LiveController(
            hub: dependencies.hub,
            sessions: sessions,
            devices: DeviceStore(client: dependencies.client),
            limits: dependencies.limits,
            crossOrigin: dependencies.crossOrigin
        )
        stream.register(in: registry)
        ClientFilesController(files: dependencies.clientFiles).register(in: registry)
        if let console = dependencies.console {
            ConsoleRoutes<HeraldRequestContext>(
                site: console,
                client: dependencies.client,
                adminToken: dependencies.adminToken,
                actions: .api(
                    notifications: notifications,
                    schedules: schedules,
                    users: users,
                    apns: apns,
                    fcm: fcm,
                    webPush: webPush,
                    topics: topics,
                    fixtures: FixtureLoader(client: dependencies.client),
                    limits: dependencies.limits
                )
            ).register(on: router)
        }
        // Last, so that it sees only the requests no route took (see the type).
        router.add(middleware: MethodNotAllowedMiddleware(routes: registry.routes))
        return (router, registry.routes, stream)
    }

    /// The send path of `POST /v1/notifications`, which scheduled sends take too.
    static func notificationsController(_ dependencies: Dependencies) -> NotificationsController {
        NotificationsController(
            notifications: NotificationStore(client: dependencies.client),
            channels: ChannelStore(client: dependencies.client),
            templates: TemplateStore(client: dependencies.client),
            users: UserStore(client: dependencies.client),
            fanoutWake: dependencies.fanoutWake
        )
    }

    /// The service that makes scheduled sends when they are due, with the routes' send path.
    static func scheduler(_ dependencies: Dependencies, lease: Duration, logger: Logger) -> some Service {
        SchedulerService(
            scheduler: Scheduler(
                schedules: ScheduleStore(client: dependencies.client),
                notifications: notificationsController(dependencies),
                logger: logger,
                lease: lease
            ),
            executor: dependencies.client.executor,
            wake: dependencies.scheduleWake,
            logger: logger
        )
    }

    /// The HTTP application, ready to run in a `ServiceGroup`.
    public static func build(
        _ dependencies: Dependencies,
        host: String,
        port: Int,
        logger: Logger,
        services: [any Service] = [],
        idleTimeout: Duration = .seconds(75),
        eventLoopGroup: EventLoopGroupProvider = .singleton,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let (router, _, streams) = buildRouters(dependencies)
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                HeraldServerChannel(responder: responder, streams: streams, client: dependencies.client, idleTimeout: idleTimeout)
            },
            configuration: .init(address: .hostname(host, port: port), serverName: "Herald"),
            services: services,
            onServerRunning: { channel in
                await onServerRunning(channel.localAddress?.port ?? port)
            },
            eventLoopGroupProvider: eventLoopGroup,
            logger: logger
        )
    }
}
