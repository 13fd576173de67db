import CLI
import Foundation
import V4L2

/// `ppc-tool capture devices|card`: the cameras this machine has, and what one of them can do — every format with
/// its sizes and rates, and the mode ppc would choose and why (frame rate first, seed 000 REQ-FPS-1).
enum CaptureCommand {
    static let command = Command(
        "capture", abstract: "V4L2 cameras: list them, and read one's capability card.",
        subcommands: [
            Command(
                "devices", abstract: "Every V4L2 video-capture node under /dev, with its card name and the mode ppc would choose.",
                options: [jsonFlag, .value("dev", "dir", help: "Where to look (default /dev).")], run: devices),
            Command(
                "card", abstract: "One device's capability card: inputs, formats, sizes, rates, controls, and ppc's choice.",
                options: [
                    jsonFlag,
                    .value("input", "n", help: "Only modes on this input."),
                    .value("size", "WxH", help: "Only modes of this size."),
                    .value("fps", "rate", help: "Only modes at this rate."),
                ],
                arguments: [Argument("device", help: "e.g. /dev/video0")], run: card),
        ])

    static func devices(_ inv: Invocation) throws -> ExitCode {
        let dir = inv.value("dev") ?? "/dev"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            .filter { $0.hasPrefix("video") && Int($0.dropFirst(5)) != nil }
            .sorted { Int($0.dropFirst(5))! < Int($1.dropFirst(5))! }
        var found: [[String: Any]] = []
        var lines: [String] = []
        for n in names {
            let path = dir + "/" + n
            do {
                let d = try V4L2Device(path: path)
                let c = try CapabilityCard.read(d)
                let choice = ModeSelection.choose(c.modes)
                found.append([
                    "device": path, "card": c.capability.card, "driver": c.capability.driver, "bus": c.capability.busInfo,
                    "inputs": c.inputs.count, "modes": c.modes.count, "choice": choice.mode.map { "\($0)" } ?? NSNull(),
                ])
                lines.append("\(path): \(c.capability.card) (\(c.capability.driver), \(c.capability.busInfo)) — \(c.modes.count) modes; ppc would choose \(choice.mode.map { "\($0)" } ?? "none: \(choice.why)")")
            } catch where error.kind == .unsupported {
                lines.append("\(path): not a capture device (\(error.detail))")  // metadata and output nodes share the name
            } catch {
                found.append(["device": path, "error": "\(error)"])
                lines.append("\(path): \(error)")
            }
        }
        if inv.flag("json") {
            try printJSON(found)
        } else {
            if names.isEmpty { lines.append("no video devices under \(dir)") }
            for l in lines { Terminal.out(l) }
        }
        return .success
    }

    static func card(_ inv: Invocation) throws -> ExitCode {
        let path = inv.argument(0)!
        var constraints = ModeConstraints()
        constraints.input = try inv.parsed("input", as: Int.self)
        constraints.framesPerSecond = try inv.parsed("fps", as: Double.self)
        if let size = inv.value("size") {
            let p = size.split(separator: "x").compactMap { Int($0) }
            guard p.count == 2 else { throw CommandFailure.usage("--size '\(size)': expected WIDTHxHEIGHT") }
            constraints.width = p[0]
            constraints.height = p[1]
        }
        let c: CapabilityCard
        do { c = try CapabilityCard.read(try V4L2Device(path: path)) } catch {
            throw CommandFailure.failure("\(error)")
        }
        if inv.flag("json") { try printJSON(c.json(constraints: constraints)) } else { for l in c.lines(constraints: constraints) { Terminal.out(l) } }
        return ModeSelection.choose(c.modes, constraints).mode == nil ? .failure : .success
    }
}
