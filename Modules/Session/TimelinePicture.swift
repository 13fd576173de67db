import Foundation

/// A session on one capture-clock axis, drawn as SVG: the audio envelope, candidates and shots, the clip windows as
/// minted, the ring's fragments — readable at any length.
///
/// An hour with 150 shots reads as well as twelve seconds with three: the envelope is reduced to one peak per pixel
/// column (at most ~2 300 points, whatever the length); ticks fall on a round interval chosen so there are at most about
/// twelve (seconds, then minutes:seconds); labels are thinned so none overprints another (each shot's and clip's full
/// name stays in a tooltip). A picture of an hour stays well under 200 KB.
struct TimelinePicture {
    struct Clip {
        var label: String
        var startNs: Int64
        var endNs: Int64
    }

    var title: String
    /// (time, peak 0…1) per audio block.
    var envelope: [(Int64, Float)]
    /// (start, end) of each ring fragment.
    var fragments: [(Int64, Int64)]
    var clips: [Clip]
    /// (id, t0) of each shot.
    var shots: [(UInt64, Int64)]
    var candidates: [Int64]

    static let width = 1200.0
    static let height = 320.0
    static let left = 50.0
    static let plotWidth = width - left - 20

    /// A round tick interval (ns) giving at most about twelve ticks over `span`.
    static func tickInterval(spanNs: Int64) -> Int64 {
        let steps: [Int64] = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14_400, 43_200, 86_400]
        let seconds = Double(spanNs) / 1e9
        return (steps.first { seconds / Double($0) <= 12 } ?? steps.last!) * 1_000_000_000
    }

    /// A tick's label: seconds for short sessions, minutes:seconds (or hours:minutes:seconds) for long ones.
    static func tickLabel(_ ns: Int64, spanNs: Int64) -> String {
        let s = ns / 1_000_000_000
        if spanNs <= 120_000_000_000 { return "\(s)" }
        if s < 3600 { return String(format: "%lld:%02lld", s / 60, s % 60) }
        return String(format: "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60)
    }

    /// A label's width in pixels at 11 px sans-serif (a generous estimate, so thinned labels never touch).
    static func labelWidth(_ text: String) -> Double { Double(text.count) * 6.5 + 6 }

    /// Characters SVG text must not carry raw.
    static func escaped(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(
            of: ">", with: "&gt;")
    }

    func svg() -> String {
        let start =
            [fragments.first?.0, envelope.first?.0, shots.first?.1, clips.first?.startNs].compactMap { $0 }.min() ?? 0
        let end = max(
            start + 1,
            [fragments.last?.1, envelope.last?.0, shots.last?.1, clips.last?.endNs].compactMap { $0 }.max() ?? 1)
        let span = end - start
        func x(_ t: Int64) -> Double { Self.left + (Double(t - start) / Double(span)) * Self.plotWidth }
        func f(_ v: Double) -> String { String(format: "%.1f", v) }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(Self.width))" height="\(Int(Self.height))" font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(Self.left)" y="16" font-size="13">\(Self.escaped(title)) — capture clock</text>

            """
        // Clip windows as minted; a label only where it has room (the clip's name is always in its tooltip).
        var labelEnd = -Double.infinity
        for clip in clips {
            let x0 = x(clip.startNs)
            svg +=
                "<rect x=\"\(f(x0))\" y=\"30\" width=\"\(f(max(1, x(clip.endNs) - x0)))\" height=\"230\" fill=\"#2a7\" fill-opacity=\"0.12\"><title>\(Self.escaped(clip.label))</title></rect>\n"
            let short = clip.label.split(separator: "-").last.map(String.init) ?? clip.label
            let text = clips.count <= 4 ? clip.label : "#\(short)"
            if x0 + 3 >= labelEnd {
                svg += "<text x=\"\(f(x0 + 3))\" y=\"42\" fill=\"#175\">\(Self.escaped(text))</text>\n"
                labelEnd = x0 + 3 + Self.labelWidth(text)
            }
        }
        // Audio envelope: the loudest peak in each pixel column, dBFS (−80…0 mapped to 0…90 px either side of y = 140).
        func envelopeHeight(_ peak: Float) -> Double {
            max(0, min(1, (20 * log10(Double(max(peak, 1e-9))) + 80) / 80)) * 90
        }
        var columns: [(Double, Float)] = []
        for (t, peak) in envelope {
            let column = x(t).rounded(.down)
            if let last = columns.last, last.0 == column {
                columns[columns.count - 1].1 = max(last.1, peak)
            } else {
                columns.append((column, peak))
            }
        }
        if !columns.isEmpty {
            var path = ""
            for (i, (cx, peak)) in columns.enumerated() {
                path += (i == 0 ? "M" : "L") + f(cx) + "," + f(140 - envelopeHeight(peak))
            }
            for (cx, peak) in columns.reversed() { path += "L" + f(cx) + "," + f(140 + envelopeHeight(peak)) }
            svg += "<path d=\"\(path)Z\" fill=\"#57a\" fill-opacity=\"0.6\"/>\n"
        }
        svg += "<text x=\"4\" y=\"144\">audio</text><text x=\"4\" y=\"158\" fill=\"#777\">dBFS</text>\n"
        for (i, fragment) in fragments.enumerated() {
            svg +=
                "<rect x=\"\(f(x(fragment.0)))\" y=\"270\" width=\"\(f(max(1, x(fragment.1) - x(fragment.0))))\" height=\"14\" fill=\"\(i % 2 == 0 ? "#999" : "#bbb")\"/>\n"
        }
        svg += "<text x=\"4\" y=\"281\">ring</text>\n"
        for t in candidates {
            svg +=
                "<line x1=\"\(f(x(t)))\" y1=\"40\" x2=\"\(f(x(t)))\" y2=\"240\" stroke=\"#d33\" stroke-dasharray=\"3,2\"/>\n"
        }
        labelEnd = -Double.infinity
        for (id, t0) in shots {
            let sx = x(t0)
            svg +=
                "<line x1=\"\(f(sx))\" y1=\"30\" x2=\"\(f(sx))\" y2=\"262\" stroke=\"#d33\" stroke-width=\"2\"><title>shot \(id)</title></line>\n"
            let text = shots.count <= 12 ? "shot \(id)" : "\(id)"
            if sx + 3 >= labelEnd {
                svg += "<text x=\"\(f(sx + 3))\" y=\"258\" fill=\"#d33\">\(text)</text>\n"
                labelEnd = sx + 3 + Self.labelWidth(text)
            }
        }
        let interval = Self.tickInterval(spanNs: span)
        var tick = (start / interval) * interval
        while tick <= end {
            if tick >= start {
                let label = Self.tickLabel(tick, spanNs: span)
                svg +=
                    "<line x1=\"\(f(x(tick)))\" y1=\"288\" x2=\"\(f(x(tick)))\" y2=\"294\" stroke=\"black\"/><text x=\"\(f(x(tick) - 4))\" y=\"308\">\(label)</text>\n"
            }
            tick += interval
        }
        svg +=
            "<text x=\"\(Self.width - 480)\" y=\"16\" fill=\"#555\">red: candidates (dashed) and shots · green: clip windows · grey: ring fragments</text>\n"
        svg += "</svg>\n"
        return svg
    }
}
