import ArgumentParser
import ChildProcess
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// nginx (Debian's `nginx-light`) as an HTTP/2 sink over TLS that answers `200` to every request, for
/// pointing the push benchmark at a server much faster than the mocks — APNs, FCM's messages and a
/// Web Push service alike; `/token` answers as Google's OAuth endpoint does (an access token for an
/// hour).
///
/// APNs', FCM's and Web Push's messages get a bare `return` (Web Push's `201`), which answers before
/// the body is read, so nginx then resets the stream (RFC 9113 §8.1), as a real server may; their
/// clients take the answer. Every other request's body is read first, as real services read it:
/// AsyncHTTPClient, which FCM's token requests use, fails a request whose stream is reset while its
/// body is still going out, although the answer came. nginx reads a body only to pass it on, so those
/// requests go through a proxy to a second server block that answers.
struct NginxSink {
    let process: ChildProcess
    let url: String
    let trustRootFile: String

    /// Starts nginx on `port` with one worker, the certificate and key given, and `streams` concurrent
    /// streams per connection; waits until it listens.
    static func start(port: Int, certificateFile: String, keyFile: String, streams: Int, directory: String) async throws -> NginxSink {
        guard let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.isExecutableFile) else {
            throw ValidationError("nginx is needed for --sink nginx: apt-get install nginx-light")
        }
        let root = directory + "/nginx"
        try FileManager.default.createDirectory(atPath: root + "/logs", withIntermediateDirectories: true)
        let upstream = port + 1
        let configuration = """
            worker_processes 1;
            pid \(root)/nginx.pid;
            error_log \(root)/logs/error.log warn;
            events { worker_connections 1024; }
            http {
                access_log off;
                client_body_temp_path \(root)/body;
                keepalive_requests 100000000;
                keepalive_timeout 300s;
                server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(certificateFile);
                    ssl_certificate_key \(keyFile);
                    http2_max_concurrent_streams \(streams);
                    proxy_temp_path \(root)/proxy;
                    location /3/device/ { return 200; }
                    location /v1/projects/ { return 200; }
                    location /push/ { return 201; }
                    location / {
                        proxy_pass http://answer;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                    }
                }
                upstream answer {
                    server 127.0.0.1:\(upstream);
                    keepalive 64;
                }
                server {
                    listen 127.0.0.1:\(upstream);
                    location = /token {
                        default_type application/json;
                        return 200 '{"access_token":"bench-access-token","expires_in":3600,"token_type":"Bearer"}';
                    }
                    location / { return 200; }
                }
            }
            """
        try configuration.write(toFile: root + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = try ChildProcess.spawn(
            [nginx, "-p", root, "-c", root + "/nginx.conf", "-e", root + "/logs/error.log", "-g", "daemon off;"],
            environment: ["PATH=/usr/sbin:/usr/bin:/bin"],
            output: .file(root + "/logs/stdout.log")
        )
        for _ in 0..<100 {
            if (try? LoopbackPort.isListening(port)) == true {
                return NginxSink(process: process, url: "https://127.0.0.1:\(port)", trustRootFile: certificateFile)
            }
            try await Task.sleep(for: .milliseconds(50))  // a server starting up
        }
        kill(process.pid, SIGKILL)
        _ = process.wait()
        let log = (try? String(contentsOfFile: root + "/logs/error.log", encoding: .utf8)) ?? ""
        throw ValidationError("nginx did not start:\n\(log)")
    }

    func stop() {
        kill(process.pid, SIGTERM)
        _ = process.wait()
    }
}

/// Whether something listens on a loopback port.
enum LoopbackPort {
    static func isListening(_ port: Int) throws -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
