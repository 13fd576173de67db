import CLI
import Capture
import Config
import Foundation
import FragmentRing
import LibavEncoder
import Measure
import Media
import Pipeline
import Synthetic
import Syscall
import Benchmarks

/// `ppc-tool measure bitrate`: seed 000's E-M2 — the operating bitrate set by shaft-detection error, never by eye.
enum MeasureCommand {
    static let command = Command(
        "measure", abstract: "Instruments that make measurement records (seed 000's experiments): a record makes a parameter measured.",
        subcommands: [
            Command(
                "bitrate", abstract: "E-M2: encode the same frames at each bitrate, find the shaft in every decoded frame, pick the lowest bitrate within bound.",
                discussion: """
                    The reference is the frames as captured — what the lossless zstd codec stores bit for bit. On synthetic video
                    the shaft's true angle is known too. --write FILE stores the record (load it with --measured FILE): the
                    chosen bitrate, the date, the instrument and the whole sweep, checksummed.
                    """,
                options: [
                    .value("source", "spec", help: "synthetic[:WxH@FPS] (default synthetic:1280x720@120, noise texture) or file:PATH."),
                    .value("bitrates", "list", help: "Bitrates to try, e.g. 2,5,10,20,35M or 500k,1M (default 1,2,5,10,20,35M)."),
                    .value("seconds", "s", help: "Length of the clip swept (default 3)."),
                    .value("angle-bound", "degrees", help: "Shaft angle RMSE against lossless that still counts as the same (default 0.25)."),
                    .value("position-bound", "pixels", help: "Shaft centre RMSE against lossless (default 1.0)."),
                    .value("write", "file", help: "Write the measurement record here."),
                    .value("svg", "file", help: "Plot the sweep here."),
                    jsonFlag,
                ], run: bitrate),
        ])

    /// `2,5,10,20,35M` (a unit on the last applies to the bare ones before it, as a person writes a sweep), `500k,1M`,
    /// or bare numbers (megabits below 1000, else bits per second).
    static func parseBitrates(_ text: String) throws -> [Int] {
        let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard !items.isEmpty else { throw CommandFailure.usage("--bitrates: no bitrate given") }
        func unit(_ s: String) -> Double? { s.hasSuffix("m") ? 1e6 : s.hasSuffix("k") ? 1e3 : nil }
        let shared = items.last.flatMap(unit)
        let out = try items.map { item -> Int in
            let scale = unit(item) ?? shared
            let digits = scale != nil && unit(item) != nil ? String(item.dropLast()) : item
            guard let v = Double(digits), v > 0 else { throw CommandFailure.usage("--bitrates '\(item)': not a bitrate") }
            let bps = v * (scale ?? (v < 1000 ? 1e6 : 1))
            guard bps >= 50_000, bps <= 1e9 else { throw CommandFailure.usage("--bitrates '\(item)': expected a bitrate between 50k and 1000M") }
            return Int(bps)
        }
        return Array(Set(out)).sorted()
    }

    /// Reads every frame of a fresh source into a contiguous NV12 buffer and finds the shaft in each.
    static func shafts(of source: VideoSource) throws -> (shafts: [ShaftFinder.Shaft?], times: [Int64]) {
        let f = source.format
        var buffer = [UInt8](repeating: 0, count: f.frameBytes)
        var shafts: [ShaftFinder.Shaft?] = []
        var times: [Int64] = []
        let finder = ShaftFinder()
        while let info = try buffer.withUnsafeMutableBytes({ try source.readFrame(into: VideoFrameBuffer(contiguous: $0.baseAddress!, width: f.width, height: f.height)) }) {
            shafts.append(buffer.withUnsafeBytes { finder.find(luma: $0, width: f.width, height: f.height, stride: f.width) })
            times.append(info.timeNs)
        }
        return (shafts, times)
    }

    static func bitrate(_ inv: Invocation) throws -> ExitCode {
        let seconds = try inv.parsed("seconds", as: Double.self) ?? 3
        guard seconds > 0, seconds <= 30 else { throw CommandFailure.usage("--seconds must be 0…30") }
        let bitrates = try parseBitrates(inv.value("bitrates") ?? "1,2,5,10,20,35M")
        let angleBound = try inv.parsed("angle-bound", as: Double.self) ?? 0.25
        let positionBound = try inv.parsed("position-bound", as: Double.self) ?? 1.0
        guard angleBound > 0, positionBound > 0 else { throw CommandFailure.usage("bounds must be positive") }
        let spec = inv.value("source") ?? "synthetic:1280x720@120"
        guard spec.hasPrefix("synthetic") || spec.hasPrefix("file:") else { throw CommandFailure.usage("--source '\(spec)': expected synthetic[:WxH@FPS] or file:PATH") }
        let config = Configuration.defaults
        func makeSource() throws -> VideoSource {
            let (name, params) = try SelftestCommand.sourceStage(spec, seconds: seconds, pace: "asap")
            var p = params
            if name == "synthetic.video" { p["seconds"] = .number(seconds, isInteger: false) }
            let s = try Stages.make(VideoSource.self, named: name, kinds: [.videoSource], given: p, config: config)
            guard s.format.pixelFormat == .nv12 else { throw CommandFailure.dataError("\(spec): the sweep needs frames it can encode (NV12), not \(s.format.pixelFormat)") }
            return s
        }
        let first = try makeSource()
        let format = first.format
        let (reference, times) = try shafts(of: first)
        guard reference.contains(where: { $0 != nil }) else {
            throw CommandFailure.dataError("\(spec): no shaft found in the frames as captured — nothing to measure against")
        }
        let truth: [Double]? = (first as? SyntheticVideoSource).map { s in times.map { s.script.shaftDegrees(at: $0) } }
        let tmp = NSTemporaryDirectory() + "ppc-measure-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        var points: [SweepPoint] = []
        for (n, bps) in bitrates.enumerated() {
            let dir = "\(tmp)/\(n)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let capacity = max(20, Int(seconds / (Double(config[.fragmentNs]) / 1e9)) + 4)
            let ring = try FragmentRing(directory: "\(dir)/ring", configuration: .init(capacity: capacity, durability: .none, fileExtension: "ts"))
            let encoder = LibavVideoEncoder(codec: .h264, bitrateBps: bps, preset: "ultrafast", threads: 0)
            _ = try CaptureSession(source: try makeSource(), encoder: encoder, ring: ring, timeline: nil, fragmentNs: config[.fragmentNs]).run()
            let bytes = ring.fragments.reduce(Int64(0)) { $0 + $1.byteLength }
            let clip = "\(dir)/clip.mp4"
            _ = try ClipRemuxer.remux(fragments: ring.fragments.map { ring.path(of: $0.sequence) }, to: clip, frameIntervalTicks: ticks90k(format.frameIntervalNs))
            let reader = try MediaReader(clip)
            var buffer = [UInt8](repeating: 0, count: format.frameBytes)
            var found: [ShaftFinder.Shaft?] = []
            let finder = ShaftFinder()
            while try buffer.withUnsafeMutableBytes({ b -> Bool in
                let y = b.baseAddress!.assumingMemoryBound(to: UInt8.self)
                return try reader.readVideo(luma: y, lumaStride: format.width, chroma: y + format.width * format.height, chromaStride: format.width) != nil
            }) {
                found.append(buffer.withUnsafeBytes { finder.find(luma: $0, width: format.width, height: format.height, stride: format.width) })
            }
            let vsReference = BitrateSweep.compare(found, to: reference)
            var vsTruth: Double?
            if let truth {
                let pairs = zip(found, truth).compactMap { f, t in f.map { ($0.degrees - t) * ($0.degrees - t) } }
                vsTruth = pairs.isEmpty ? nil : (pairs.reduce(0, +) / Double(pairs.count)).squareRoot()
            }
            points.append(SweepPoint(
                bitrateBps: bps, frames: found.count, angleRMSEDegrees: vsReference.angle, positionRMSEPixels: vsReference.position,
                angleRMSEVsTruthDegrees: vsTruth, bytesPerSecond: Double(bytes) / seconds, missing: vsReference.missing))
        }
        var referenceVsTruth: Double?
        if let truth {
            let pairs = zip(reference, truth).compactMap { f, t in f.map { ($0.degrees - t) * ($0.degrees - t) } }
            referenceVsTruth = pairs.isEmpty ? nil : (pairs.reduce(0, +) / Double(pairs.count)).squareRoot()
        }
        let chosen = BitrateSweep.lowestWithin(points, angleBound: angleBound, positionBound: positionBound)
        let machine = BenchCommand.provenance()
        let sweep: [[String: Any]] = points.map { p in
            ["bitrateBps": p.bitrateBps, "frames": p.frames, "angleRMSEDegrees": p.angleRMSEDegrees, "positionRMSEPixels": p.positionRMSEPixels,
             "angleRMSEVsTruthDegrees": p.angleRMSEVsTruthDegrees as Any? ?? NSNull(), "bytesPerSecond": p.bytesPerSecond, "missing": p.missing]
        }
        var result = machine
        result["area"] = "measure bitrate (E-M2)"
        result["source"] = "\(spec) \(format), \(reference.count) frames"
        result["encoder"] = "x264 ultrafast, IDR per 0.5 s fragment, no B-frames (the capture path's settings)"
        result["reference"] = "the frames as captured (what the lossless zstd codec stores bit for bit)"
        result["referenceAngleRMSEVsTruthDegrees"] = referenceVsTruth as Any? ?? NSNull()
        result["bounds"] = ["angleDegrees": angleBound, "positionPixels": positionBound]
        result["sweep"] = sweep
        result["chosenBitrateBps"] = chosen?.bitrateBps as Any? ?? NSNull()
        if let svg = inv.value("svg") {
            try BitrateSweep.svg(points, angleBound: angleBound, chosen: chosen, title: "E-M2: shaft angle error against bitrate — \(format)")
                .write(toFile: svg, atomically: true, encoding: .utf8)
        }
        if let path = inv.value("write") {
            guard let chosen else { throw CommandFailure.failure("no bitrate in the sweep stays within the bounds: no record written (try higher bitrates)") }
            let date = String((machine["date"] as? String ?? "").prefix(10))
            let cpu = ((machine["machine"] as? [String: Any])?["cpu"] as? String) ?? "this machine"
            do {
                try MeasurementFile.write(
                    to: path, key: "capture.videoBitrateBps", value: Double(chosen.bitrateBps), date: date,
                    instrument: "ppc-tool measure bitrate (E-M2): lowest of \(bitrates.count) bitrates with shaft angle RMSE ≤ \(angleBound)° and centre ≤ \(positionBound) px against lossless, \(format), \(cpu)",
                    evidence: ["sweep": sweep, "bounds": ["angleDegrees": angleBound, "positionPixels": positionBound], "source": "\(spec) \(format)",
                               "referenceAngleRMSEVsTruthDegrees": referenceVsTruth as Any? ?? NSNull()])
            } catch { throw CommandFailure.failure("\(path): \(error)") }
            result["record"] = path
        }
        var lines = ["E-M2 bitrate sweep: \(spec) \(format), \(reference.count) frames; shaft against the frames as captured (lossless)"]
        if let r = referenceVsTruth { lines.append(String(format: "  the finder itself, on lossless frames, against the script's true angle: %.3f° RMSE", r)) }
        for p in points {
            lines.append(String(format: "  %6.2f Mbit/s: angle RMSE %.3f°, centre RMSE %.2f px%@, %.0f kB/s, %d frames%@%@",
                                Double(p.bitrateBps) / 1e6, p.angleRMSEDegrees, p.positionRMSEPixels,
                                p.angleRMSEVsTruthDegrees.map { String(format: " (%.3f° vs truth)", $0) } ?? "", p.bytesPerSecond / 1000, p.frames,
                                p.missing > 0 ? " (\(p.missing) without a shaft)" : "", p == chosen ? "  ← lowest within bound" : ""))
        }
        lines.append(chosen.map { "chosen: \(Double($0.bitrateBps) / 1e6) Mbit/s (bound \(angleBound)°, \(positionBound) px)" } ?? "no bitrate in the sweep stays within the bound")
        if let w = inv.value("write") { lines.append("record written: \(w) (load it with --measured \(w))") }
        try BenchCommand.emit(result, json: inv.flag("json"), lines: lines)
        return chosen == nil ? .failure : .success
    }
}
