import Foundation
import HTTPTypes
import HeraldServer
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Testing

/// `GET /client/{file}`: the web client's modules, for pages to import, with caching headers and CORS.
@Suite("Web client files")
struct ClientFilesTests {
    @Test func theDemoPageIsServedOnlyWhenAsked() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            var dependencies = try heraldDependencies(db, adminToken: nil)
            dependencies.clientFiles = try ClientFiles.load(directory: TestPostgres.repositoryRoot() + "/web", demo: true)
            let page = try String(contentsOfFile: TestPostgres.repositoryRoot() + "/web/demo.html", encoding: .utf8)
            try await Application(router: HeraldApplication.buildRouter(dependencies).router).test(.router) { client in
                let demo = try await client.execute(uri: "/demo", method: .get)
                #expect(demo.status == .ok)
                #expect(demo.headers[.contentType] == "text/html; charset=utf-8")
                #expect(String(buffer: demo.body) == page)
                // The page takes where the client comes from from its own markup, never its address.
                #expect(page.contains(#"<meta name="herald-url" content="">"#) && !page.contains("settings.get(\"herald\")"))
            }
        }
    }

    @Test func theModulesAreServedWithValidatorsAndCORS() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            var dependencies = try heraldDependencies(db, adminToken: nil)
            dependencies.crossOrigin = try CrossOriginPolicy(parsing: "https://app.example.com")
            dependencies.clientFiles = try ClientFiles.load(directory: TestPostgres.repositoryRoot() + "/web")
            let source = try String(contentsOfFile: TestPostgres.repositoryRoot() + "/web/herald.js", encoding: .utf8)
            try await Application(router: HeraldApplication.buildRouter(dependencies).router).test(.router) { client in
                let module = try await client.execute(uri: "/client/herald.js", method: .get, headers: [.origin: "https://app.example.com"])
                #expect(module.status == .ok)
                #expect(String(buffer: module.body) == source)
                #expect(module.headers[.contentType] == "text/javascript; charset=utf-8")
                #expect(module.headers[.cacheControl] == "public, max-age=300")
                #expect(module.headers[.accessControlAllowOrigin] == "https://app.example.com")
                #expect(module.headers[.xContentTypeOptions] == "nosniff")
                let etag = try #require(module.headers[.eTag])
                // The tag as sent, marked weak by a proxy, among others, or any.
                for validator in [etag, "W/\(etag)", "\"other\", \(etag)", "*"] {
                    let unchanged = try await client.execute(uri: "/client/herald.js", method: .get, headers: [.ifNoneMatch: validator])
                    #expect(unchanged.status == .notModified, "\(validator)")
                    #expect(unchanged.body.readableBytes == 0)
                }
                let changed = try await client.execute(uri: "/client/herald.js", method: .get, headers: [.ifNoneMatch: "\"other\""])
                #expect(changed.status == .ok)
                // Its siblings, which it imports; nothing but the modules.
                #expect(try await client.execute(uri: "/client/collection.js", method: .get).status == .ok)
                // No HTML under /client/: a page there would share Herald's origin with the console.
                for missing in ["/client/nothing.js", "/client/package.json", "/client/README.md", "/client/demo.html", "/client/..%2Fsql", "/demo"] {
                    let answer = try await client.execute(uri: missing, method: .get)
                    #expect(answer.status == .notFound, "\(missing)")
                }
                // A page on an origin not listed may not import them.
                let foreign = try await client.execute(uri: "/client/herald.js", method: .get, headers: [.origin: "https://evil.example.net"])
                #expect(foreign.status == .forbidden)
            }
        }
    }
}
