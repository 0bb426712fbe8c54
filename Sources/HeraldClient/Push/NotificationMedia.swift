public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The media of an alert push, fetched for a Notification Service Extension to attach: the first of
/// the push's `files` (which the server fills from the notification's `media_url`), downloaded within
/// a deadline into a file whose extension names its type, as `UNNotificationAttachment` needs.
public enum NotificationMedia {
    /// Downloads `url` into a new file in the temporary directory, named with the extension of the
    /// answer's MIME type (else the URL's), at most `maximumBytes` (checked once the body is in: keep
    /// media small, as an extension's memory is). Throws `HeraldClientError.timedOut`
    /// past `timeout`, `transport` when the download fails or is too large, `server` for a non-2xx.
    public static func download(_ url: URL, timeout: Duration = .seconds(10), maximumBytes: Int = 10 << 20) async throws -> URL {
        let session = URLSession.ephemeral(timeout: timeout)
        defer { session.finishTasksAndInvalidate() }
        return try await HeraldClient.within(timeout, orThrow: .timedOut) {
            let (data, response): (Data, URLResponse)
            do {
                (data, response) = try await session.data(from: url)
            } catch {
                throw HeraldClientError.from(error)
            }
            if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
                throw HeraldClientError.server(status: http.statusCode, code: "media_unavailable", message: "the media answered \(http.statusCode)")
            }
            guard data.count <= maximumBytes else {
                throw HeraldClientError.transport(code: 0, description: "the media is larger than \(maximumBytes) bytes")
            }
            let name = UUID().uuidString + "." + fileExtension(mimeType: response.mimeType, url: url)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(name)
            do {
                try data.write(to: file)
            } catch {
                throw HeraldClientError.transport(code: 0, description: "the media could not be saved: \(error)")
            }
            return file
        }
    }

    /// The file extension for a media type, from the MIME type when it is one iOS attaches (JPEG, GIF,
    /// PNG; MP3, M4A, WAV; MP4, QuickTime), else the URL's own (`jpg` when it has none).
    static func fileExtension(mimeType: String?, url: URL) -> String {
        let known = [
            "image/jpeg": "jpg", "image/png": "png", "image/gif": "gif",
            "video/mp4": "mp4", "video/quicktime": "mov", "audio/mpeg": "mp3", "audio/mp4": "m4a", "audio/x-wav": "wav",
        ]
        if let mimeType, let known = known[mimeType.lowercased()] { return known }
        return url.pathExtension.isEmpty ? "jpg" : url.pathExtension.lowercased()
    }
}
