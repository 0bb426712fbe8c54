import Testing

/// Every client suite, one test at a time: they share a cluster (`TestPostgres.ClusterChoice.client`),
/// and an open transaction of one test's server would hold back what another's syncs may see.
@Suite("Client library", .serialized)
struct ClientSuites {}
