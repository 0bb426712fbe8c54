import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleRoutes {
    func registerSend(on console: RouterGroup<Context>) {
        console.get("send") { request, _ in
            let session = try await requireSession(request)
            let query = request.uri.queryParameters
            var fields: [String: String] = [:]
            for (name, value) in query { fields[String(name)] = String(value) }
            return try await sendPage(request, session: session, form: SendForm(fields: fields), problem: nil, status: .ok)
        }
        // The `curl` command for the form as it is, for the page's script to show while it is filled in.
        console.get("send/curl") { request, _ in
            _ = try await requireSession(request)
            var fields: [String: String] = [:]
            for (name, value) in request.uri.queryParameters { fields[String(name)] = String(value) }
            let form = SendForm(fields: fields)
            guard let template = try await templates.get(form.field("template"))?.template else {
                throw ConsoleRefusal(.notFound, "There is no template with this key.")
            }
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(
                    byteBuffer: ByteBuffer(
                        string: SendForm.curl(
                            origin: Self.origin(request),
                            body: SendForm.json(form.body(template: template)),
                            scheduled: form.isScheduled
                        )
                    )
                )
            )
        }
        console.post("send") { request, context in
            let (raw, session) = try await requireForm(FieldsForm.self, request, context: context)
            let form = SendForm(fields: raw.fields)
            guard let template = try await templates.get(form.field("template"))?.template else {
                throw ConsoleRefusal(.notFound, "There is no template with this key.")
            }
            if !form.field("repeat").isEmpty, !form.isScheduled {
                return try await sendPage(
                    request,
                    session: session,
                    form: form,
                    problem: "A repeat needs a time: give one under When.",
                    status: .unprocessableContent
                )
            }
            let body = SendForm.json(form.body(template: template))
            let answer = try await form.isScheduled ? actions.scheduleSend(body) : actions.sendNotification(body)
            guard (200..<300).contains(answer.status) else {
                return try await sendPage(request, session: session, form: form, problem: Self.apiMessage(answer), status: .unprocessableContent)
            }
            if form.isScheduled { return Self.redirect("/console/scheduled?notice=Scheduled") }
            guard let id = Self.notificationID(answer) else { throw ConsoleRefusal(.internalServerError, "The send's answer named no notification.") }
            return Self.redirect("/console/notifications/\(id)")
        }
    }

    /// The page: a template picker, and once one is picked, the form its variables make.
    private func sendPage(
        _ request: Request,
        session: ConsoleSessionStore.Session,
        form: SendForm,
        problem: String?,
        status: HTTPResponse.Status
    ) async throws -> Response {
        let all = try await templates.list(after: nil, limit: 500)
        let channelList = try await channels.list(after: nil, limit: 500)
        let key = form.field("template")
        let template = key.isEmpty ? nil : all.first { $0.template.key == key }?.template
        if !key.isEmpty, template == nil { throw ConsoleRefusal(.notFound, "There is no template with this key.") }
        var values: [String: Any] = [
            "templates": all.map { ["key": $0.template.key, "name": $0.template.name, "selected": $0.template.key == key] },
            "chosen": template != nil,
            "template": key,
            "problem": problem ?? false,
        ]
        if let template {
            var typed: [String: String] = [:]
            for variable in template.variables { typed[variable.name] = form.fields[TemplatePreview.parameter(variable.name)] }
            let fields = TemplatePreview.fields(template, typed: typed, problems: [:])
            let chosenChannel = form.field("channel_url")
            values.merge(
                [
                    "fields": fields,
                    "channels": channelList.map { ["url": $0.channel.url, "selected": $0.channel.url == chosenChannel] },
                    "noChannels": channelList.isEmpty,
                    "all": form.field("audience") == "all",
                    "toTopic": form.field("audience") == "topic",
                    "topic": form.field("topic"),
                    "targets": form.field("targets"),
                    "alert": form.field("push_alert") == "on",
                    "pushText": form.field("push_text"),
                    "pushSound": form.field("push_sound"),
                    "low": form.field("push_priority") == "low",
                    "expiresAt": form.field("expires_at"),
                    "batchKey": form.field("batch_key"),
                    "batchWindow": form.field("batch_window"),
                    "batchAlertLast": form.field("batch_alert") == "last",
                    "batchAlertNone": form.field("batch_alert") == "none",
                    "sendAt": form.field("send_at"),
                    "deliverAtLocal": form.field("deliver_at_local"),
                    "daily": form.field("repeat") == "daily",
                    "weekly": form.field("repeat") == "weekly",
                    "curl": SendForm.curl(
                        origin: Self.origin(request),
                        body: SendForm.json(form.body(template: template)),
                        scheduled: form.isScheduled
                    ),
                ]
            ) { $1 }
        }
        return page("send", title: "Send", section: .send, session: session, status: status, values: values)
    }

    /// `http://host:port` as the browser reached the console.
    static func origin(_ request: Request) -> String {
        "\(cameOverTLS(request) ? "https" : "http")://\(request.head.authority ?? "localhost:8080")"
    }

    /// The message of the API's `{"error": {"message": …}}`.
    static func apiMessage(_ answer: ConsoleActions.Answer) -> String {
        (try? JSONDecoder().decode(APIFailure.self, from: Data(answer.body)))?.error.message ?? "The API answered \(answer.status)."
    }

    static func notificationID(_ answer: ConsoleActions.Answer) -> String? {
        (try? JSONDecoder().decode(APICreated.self, from: Data(answer.body)))?.id
    }
}

/// The admin API's error answer, as far as the console reads it.
private struct APIFailure: Decodable {
    struct Detail: Decodable { var message: String }
    var error: Detail
}

/// A created notification's answer, as far as the console reads it.
private struct APICreated: Decodable {
    var id: String
}
