import Foundation
import Testing

@testable import Session

@Suite("TimelinePicture: a session of any length reads well")
struct TimelinePictureTests {
    /// An hour at 100 envelope points a second, 150 shots (each a candidate and a 4.5 s clip), 20 ring fragments.
    static func hour() -> TimelinePicture {
        let s: Int64 = 1_000_000_000
        let envelope: [(Int64, Float)] = (0..<360_000).map { (i: Int) -> (Int64, Float) in
            (Int64(i) * 10_000_000, Float(i % 97 + 1) / 100)
        }
        let shots: [(UInt64, Int64)] = (1...150).map { (i: Int) -> (UInt64, Int64) in (UInt64(i), Int64(i) * 23 * s) }
        let fragments: [(Int64, Int64)] = (0..<20).map { (i: Int) -> (Int64, Int64) in
            (3590 * s + Int64(i) * s / 2, 3590 * s + Int64(i + 1) * s / 2)
        }
        let clips: [TimelinePicture.Clip] = shots.map { shot -> TimelinePicture.Clip in
            TimelinePicture.Clip(
                label: "hour-20261201T091500Z-9f3c01ab-" + String(format: "%03llu", shot.0),
                startNs: shot.1 - 3 * s / 2, endNs: shot.1 + 3 * s)
        }
        return TimelinePicture(
            title: "ppc session 'hour'", envelope: envelope,
            fragments: fragments,
            clips: clips,
            shots: shots, candidates: shots.map(\.1))
    }

    /// x positions of every `<text … y="Y">` element.
    static func labels(_ svg: String, y: Int) -> [(x: Double, text: String)] {
        let pattern = try! NSRegularExpression(pattern: "<text x=\"([0-9.\\-]+)\" y=\"\(y)\"[^>]*>([^<]*)</text>")
        return pattern.matches(in: svg, range: NSRange(svg.startIndex..., in: svg)).map { m in
            let s = svg as NSString
            return (Double(s.substring(with: m.range(at: 1)))!, s.substring(with: m.range(at: 2)))
        }
    }

    @Test func anHourWith150ShotsStaysSmall() {
        let svg = Self.hour().svg()
        #expect(svg.utf8.count < 200_000, "\(svg.utf8.count) bytes")
        // For a person to look at: PPC_TEST_OUTPUT=DIR keeps the picture.
        if let dir = ProcessInfo.processInfo.environment["PPC_TEST_OUTPUT"] {
            try? Data(svg.utf8).write(to: URL(fileURLWithPath: "\(dir)/timeline-hour.svg"))
        }
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n"))
    }

    @Test func ticksAreFewAndRoundAndLabelsNeverOverprint() {
        let svg = Self.hour().svg()
        let ticks = Self.labels(svg, y: 308)
        #expect((4...13).contains(ticks.count), "\(ticks.map(\.text))")
        #expect(
            ticks.allSatisfy { $0.text.contains(":") }, "an hour is labelled in minutes:seconds: \(ticks.map(\.text))")
        for y in [42, 258, 308] {
            let placed = Self.labels(svg, y: y).sorted { $0.x < $1.x }
            for (a, b) in zip(placed, placed.dropFirst()) {
                #expect(
                    a.x + TimelinePicture.labelWidth(a.text) <= b.x + 3 + 0.1,
                    "y \(y): '\(a.text)' at \(a.x) runs into '\(b.text)' at \(b.x)")
            }
        }
        // Every shot and clip keeps its full name in a tooltip, labelled or not.
        #expect(svg.components(separatedBy: "<title>shot ").count - 1 == 150)
        #expect(svg.contains("<title>hour-20261201T091500Z-9f3c01ab-150</title>"))
    }

    @Test func aShortSessionKeepsWholeSecondsAndFullNames() {
        let s: Int64 = 1_000_000_000
        let svg = TimelinePicture(
            title: "t", envelope: (0...1200).map { (i: Int) -> (Int64, Float) in (Int64(i) * 10_000_000, 0.1) },
            fragments: [],
            clips: [.init(label: "short-x-001", startNs: 1 * s, endNs: 5 * s)], shots: [(1, 2 * s)], candidates: [2 * s]
        ).svg()
        #expect(Self.labels(svg, y: 308).map(\.text) == (0...12).map { "\($0)" })
        #expect(svg.contains(">short-x-001</text>") && svg.contains(">shot 1</text>"))
    }

    @Test func theEnvelopeIsOnePointPerPixelColumnWhateverTheLength() {
        let svg = Self.hour().svg()
        let path =
            svg.components(separatedBy: "<path d=\"").dropFirst().first?.components(separatedBy: "\"").first ?? ""
        let points = path.filter { $0 == "L" || $0 == "M" }.count
        #expect(points <= 2 * Int(TimelinePicture.plotWidth + 2), "\(points) points")
    }
}
