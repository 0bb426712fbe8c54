import Foundation

/// A notification's funnel — recipients, delivered, read, clicked — as horizontal bars in inline SVG,
/// drawn on the server (the console's Content-Security-Policy allows no inline script or style).
struct FunnelChart {
    var steps: [(name: String, count: Int64)]

    static let width = 480
    static let rowHeight = 28

    var svg: String {
        let top = max(1, steps.map(\.count).max() ?? 1)
        let labelWidth = 90
        let barSpace = Double(Self.width - labelWidth - 80)
        var rows = ""
        for (index, step) in steps.enumerated() {
            let y = index * Self.rowHeight
            let width = step.count == 0 ? 0 : max(2, barSpace * Double(step.count) / Double(top))
            let share = steps[0].count == 0 ? 0 : Double(step.count) * 100 / Double(steps[0].count)
            rows += "<text x=\"0\" y=\"\(y + 18)\">\(step.name)</text>"
            rows +=
                "<rect class=\"funnel\" x=\"\(labelWidth)\" y=\"\(y + 4)\" width=\"\(String(format: "%.1f", width))\" height=\"\(Self.rowHeight - 8)\"/>"
            rows += "<text x=\"\(labelWidth + Int(width) + 6)\" y=\"\(y + 18)\">\(step.count) (\(String(format: "%.0f", share)) %)</text>"
        }
        let summary = steps.map { "\($0.count) \($0.name.lowercased())" }.joined(separator: ", ")
        return """
            <svg class="chart funnel-chart" viewBox="0 0 \(Self.width) \(steps.count * Self.rowHeight)" role="img" aria-labelledby="funnel-title">\
            <title id="funnel-title">Funnel: \(summary)</title>\(rows)</svg>
            """
    }
}
