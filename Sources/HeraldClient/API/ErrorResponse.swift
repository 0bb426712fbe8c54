import OpenAPIRuntime

/// The documented error answers (`{"error":{"code","message"}}`), whatever operation they came from.
protocol ErrorResponse {
    static var status: Int { get }
    var error: Components.Schemas._Error? { get }
}

extension Components.Responses.BadRequest: ErrorResponse {
    static var status: Int { 400 }
    var error: Components.Schemas._Error? { try? body.json }
}

extension Components.Responses.Unauthorized: ErrorResponse {
    static var status: Int { 401 }
    var error: Components.Schemas._Error? { try? body.json }
}

extension Components.Responses.NotFound: ErrorResponse {
    static var status: Int { 404 }
    var error: Components.Schemas._Error? { try? body.json }
}

extension Components.Responses.TooManyRequests: ErrorResponse {
    static var status: Int { 429 }
    var error: Components.Schemas._Error? { try? body.json }
}

extension Components.Responses.TooLarge: ErrorResponse {
    static var status: Int { 413 }
    var error: Components.Schemas._Error? { try? body.json }
}

/// A topic whose subscribers the app chooses (`topic_not_self_subscribe`).
extension Operations.FollowTopic.Output.Forbidden: ErrorResponse {
    static var status: Int { 403 }
    var error: Components.Schemas._Error? { try? body.json }
}

extension Operations.UnfollowTopic.Output.Forbidden: ErrorResponse {
    static var status: Int { 403 }
    var error: Components.Schemas._Error? { try? body.json }
}

extension HeraldClientError {
    /// The error an operation's answer stands for, when it is not the one the caller expected: a
    /// documented error names its code and message; anything else its status.
    ///
    /// Every generated `Output` is an enum whose error cases carry one of the shared responses or
    /// `undocumented(statusCode:_:)`; the case's value is read by reflection, so that one function
    /// serves every operation.
    static func unexpected(_ output: Any) -> HeraldClientError {
        guard let value = Mirror(reflecting: output).children.first?.value else {
            return .decoding("unexpected answer: \(output)")
        }
        if let response = value as? any ErrorResponse {
            let status = type(of: response).status
            if status == 401 { return .unauthorized }
            let error = response.error?.error
            return .server(status: status, code: error?.code ?? "http_\(status)", message: error?.message ?? "")
        }
        if let children = Mirror(reflecting: value).children.first?.value as? Int {
            return .server(status: children, code: "http_\(children)", message: "")
        }
        return .decoding("unexpected answer: \(output)")
    }
}
