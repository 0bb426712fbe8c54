import Foundation

/// A bar chart of the last 24 hours as inline SVG, drawn on the server: no script, no style
/// attribute (the console's Content-Security-Policy allows neither inline), classes styled by
/// `console.css`.
struct HourlyChart {
    /// Two series of 24 hourly values, oldest first.
    var sends: [Int64]
    var pushes: [Int64]

    static let width = 480
    static let height = 120

    var svg: String {
        let top = max(1, (sends + pushes).max() ?? 1)
        let slot = Double(Self.width) / 24
        let barWidth = slot / 2 - 1
        var bars = ""
        for hour in 0..<24 {
            for (series, values, offset) in [("sends", sends, 0.0), ("pushes", pushes, barWidth + 1)] {
                let value = hour < values.count ? values[hour] : 0
                guard value > 0 else { continue }
                let height = max(1, Double(Self.height - 14) * Double(value) / Double(top))
                let x = Double(hour) * slot + offset
                let y = Double(Self.height - 14) - height
                bars += "<rect class=\"\(series)\" x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" width=\"\(Self.number(barWidth))\" "
                bars += "height=\"\(Self.number(height))\"><title>\(value) \(series), \(23 - hour) h ago</title></rect>"
            }
        }
        let total = (sends.reduce(0, +), pushes.reduce(0, +))
        return """
            <svg class="chart" viewBox="0 0 \(Self.width) \(Self.height)" role="img" aria-labelledby="chart-title">\
            <title id="chart-title">Sends (\(total.0)) and pushes (\(total.1)) per hour, the last 24 hours; the tallest bar is \(top)</title>\
            <line class="axis" x1="0" y1="\(Self.height - 14)" x2="\(Self.width)" y2="\(Self.height - 14)"/>\
            \(bars)\
            <text x="0" y="\(Self.height - 2)">24 h ago</text><text x="\(Self.width)" y="\(Self.height - 2)" text-anchor="end">now</text>\
            </svg>
            """
    }

    private static func number(_ value: Double) -> String {
        String(format: "%.1f", value)
    }
}
