import Benchmarks
import CLI
import Capture
import Config
import Detect
import Foundation
import FragmentRing
import LibavEncoder
import Measure
import Media
import Pipeline
import Policy
import Synthetic
import Syscall

/// `ppc-tool measure bitrate`: seed 000's E-M2 — the operating bitrate set by shaft-detection error, never by eye.
enum MeasureCommand {
    static let command = Command(
        "measure",
        abstract:
            "Instruments that make measurement records (seed 000's experiments): a record makes a parameter measured.",
        subcommands: [
            Command(
                "bitrate",
                abstract:
                    "E-M2: encode the same frames at each bitrate, find the shaft in every decoded frame, pick the lowest bitrate within bound.",
                discussion: """
                    The reference is the frames as captured — what the lossless zstd codec stores bit for bit. On synthetic video
                    the shaft's true angle is known too. --write FILE stores the record (load it with --measured FILE): the
                    chosen bitrate, the date, the instrument and the whole sweep, checksummed.
                    """,
                options: [
                    .value(
                        "source", "spec",
                        help: "synthetic[:WxH@FPS] (default synthetic:1280x720@120, noise texture) or file:PATH."),
                    .value(
                        "bitrates", "list",
                        help: "Bitrates to try, e.g. 2,5,10,20,35M or 500k,1M (default 1,2,5,10,20,35M)."),
                    .value("seconds", "s", help: "Length of the clip swept (default 3)."),
                    .value(
                        "angle-bound", "degrees",
                        help: "Shaft angle RMSE against lossless that still counts as the same (default 0.25)."),
                    .value(
                        "position-bound", "pixels",
                        help: "RMSE of how far the shaft's line passes from the lossless shaft's centre (default 0.5)."),
                    .value("write", "file", help: "Write the measurement record here."),
                    .value("svg", "file", help: "Plot the sweep here."),
                    jsonFlag,
                ], run: bitrate),
            Command(
                "sustained",
                abstract:
                    "E-M4: a warm session at one format for MINUTES: frames, drops, CPU per frame, resident memory and heat over time.",
                discussion: """
                    Source → encoder → fsynced ring as a session runs it, late frames dropped and counted (as selftest does),
                    sampled every second. --write FILE stores the sustained rate as a record for capture.expectedFrameRate
                    (the rate achieved over the whole run, with the series as evidence); --svg FILE plots the run.
                    """,
                options: [
                    .value("source", "spec", help: "As selftest's (default synthetic:640x360@120)."),
                    .value("encoder", "name", help: "Encoder plugin (default x264)."),
                    .value("minutes", "m", help: "How long (default 40, the seed's warm session)."),
                    .value("write", "file", help: "Write the measurement record here."),
                    .value("svg", "file", help: "Plot the run here."),
                    jsonFlag,
                ], run: sustained),
            Command(
                "tof",
                abstract:
                    "E-M5: the mic-to-ball distance, from claps made at the ball (sound onset against the frame they show) or a tape.",
                discussion: """
                    --file: a recording from one device (video and audio on one clock) of claps — or balls struck — at the ball.
                    Each clap's sound onset (the impact detector, to the sample) is paired with the first frame in which the
                    --region changes; the clap happened within the frame interval before that frame, so each pairing gives
                    the time of flight ± half a frame, and N claps narrow it by √N. --distance: a distance measured once with a
                    tape, and its uncertainty. --write FILE records detect.micToBallDefaultMetres (which the impact detector
                    then uses, as measured, when a manifest declares no distance).
                    """,
                options: [
                    .value("file", "path", help: "A recording with claps at the ball (video and audio)."),
                    .value(
                        "region", "x,y,w,h",
                        help: "Where in the picture the clap is seen (default: the bottom-centre ball area)."),
                    .value("distance", "metres", help: "Instead: a distance measured with a tape."),
                    .value("uncertainty", "metres", help: "With --distance: its uncertainty (default 0.02)."),
                    .value("write", "file", help: "Write the measurement record here."),
                    jsonFlag,
                ], run: tof),
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
            guard let v = Double(digits), v > 0 else {
                throw CommandFailure.usage("--bitrates '\(item)': not a bitrate")
            }
            let bps = v * (scale ?? (v < 1000 ? 1e6 : 1))
            guard bps >= 50_000, bps <= 1e9 else {
                throw CommandFailure.usage("--bitrates '\(item)': expected a bitrate between 50k and 1000M")
            }
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
        while let info = try buffer.withUnsafeMutableBytes({
            try source.readFrame(into: VideoFrameBuffer(contiguous: $0.baseAddress!, width: f.width, height: f.height))
        }) {
            shafts.append(
                buffer.withUnsafeBytes { finder.find(luma: $0, width: f.width, height: f.height, stride: f.width) })
            times.append(info.timeNs)
        }
        return (shafts, times)
    }

    static func bitrate(_ inv: Invocation) throws -> ExitCode {
        let seconds = try inv.parsed("seconds", as: Double.self) ?? 3
        guard seconds > 0, seconds <= 30 else { throw CommandFailure.usage("--seconds must be 0…30") }
        let bitrates = try parseBitrates(inv.value("bitrates") ?? "1,2,5,10,20,35M")
        let angleBound = try inv.parsed("angle-bound", as: Double.self) ?? 0.25
        let positionBound = try inv.parsed("position-bound", as: Double.self) ?? 0.5
        guard angleBound > 0, positionBound > 0 else { throw CommandFailure.usage("bounds must be positive") }
        let spec = inv.value("source") ?? "synthetic:1280x720@120"
        guard spec.hasPrefix("synthetic") || spec.hasPrefix("file:") else {
            throw CommandFailure.usage("--source '\(spec)': expected synthetic[:WxH@FPS] or file:PATH")
        }
        let config = Configuration.defaults
        func makeSource() throws -> VideoSource {
            let (name, params) = try SelftestCommand.sourceStage(spec, seconds: seconds, pace: "asap")
            var p = params
            if name == "synthetic.video" { p["seconds"] = .number(seconds, isInteger: false) }
            let s = try Stages.make(VideoSource.self, named: name, kinds: [.videoSource], given: p, config: config)
            guard s.format.pixelFormat == .nv12 else {
                throw CommandFailure.dataError(
                    "\(spec): the sweep needs frames it can encode (NV12), not \(s.format.pixelFormat)")
            }
            return s
        }
        let first = try makeSource()
        let format = first.format
        let (reference, times) = try shafts(of: first)
        guard reference.contains(where: { $0 != nil }) else {
            throw CommandFailure.dataError(
                "\(spec): no shaft found in the frames as captured — nothing to measure against")
        }
        let truth: [Double]? = (first as? SyntheticVideoSource).map { s in times.map { s.script.shaftDegrees(at: $0) } }
        let tmp = NSTemporaryDirectory() + "ppc-measure-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        var points: [SweepPoint] = []
        for (n, bps) in bitrates.enumerated() {
            let dir = "\(tmp)/\(n)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let capacity = max(20, Int(seconds / (Double(config[.fragmentNs]) / 1e9)) + 4)
            let ring = try FragmentRing(
                directory: "\(dir)/ring",
                configuration: .init(capacity: capacity, durability: .none, fileExtension: "ts"))
            let encoder = LibavVideoEncoder(codec: .h264, bitrateBps: bps, preset: "ultrafast", threads: 0)
            _ = try CaptureSession(
                source: try makeSource(), encoder: encoder, ring: ring, timeline: nil, fragmentNs: config[.fragmentNs]
            ).run()
            let bytes = ring.fragments.reduce(Int64(0)) { $0 + $1.byteLength }
            let clip = "\(dir)/clip.mp4"
            _ = try ClipRemuxer.remux(
                fragments: ring.fragments.map { ring.path(of: $0.sequence) }, to: clip,
                frameIntervalTicks: ticks90k(format.frameIntervalNs))
            let reader = try MediaReader(clip)
            var buffer = [UInt8](repeating: 0, count: format.frameBytes)
            var found: [ShaftFinder.Shaft?] = []
            let finder = ShaftFinder()
            while try buffer.withUnsafeMutableBytes({ b -> Bool in
                let y = b.baseAddress!.assumingMemoryBound(to: UInt8.self)
                return try reader.readVideo(
                    luma: y, lumaStride: format.width, chroma: y + format.width * format.height,
                    chromaStride: format.width) != nil
            }) {
                found.append(
                    buffer.withUnsafeBytes {
                        finder.find(luma: $0, width: format.width, height: format.height, stride: format.width)
                    })
            }
            let vsReference = BitrateSweep.compare(found, to: reference)
            var vsTruth: Double?
            if let truth {
                let pairs = zip(found, truth).compactMap { f, t in
                    f.map { pow(BitrateSweep.axialDifference($0.degrees, t), 2) }
                }
                vsTruth = pairs.isEmpty ? nil : (pairs.reduce(0, +) / Double(pairs.count)).squareRoot()
            }
            points.append(
                SweepPoint(
                    bitrateBps: bps, frames: found.count, angleRMSEDegrees: vsReference.angle,
                    positionRMSEPixels: vsReference.position,
                    angleRMSEVsTruthDegrees: vsTruth, bytesPerSecond: Double(bytes) / seconds,
                    missing: vsReference.missing))
        }
        var referenceVsTruth: Double?
        if let truth {
            let pairs = zip(reference, truth).compactMap { f, t in
                f.map { pow(BitrateSweep.axialDifference($0.degrees, t), 2) }
            }
            referenceVsTruth = pairs.isEmpty ? nil : (pairs.reduce(0, +) / Double(pairs.count)).squareRoot()
        }
        let chosen = BitrateSweep.lowestWithin(points, angleBound: angleBound, positionBound: positionBound)
        let machine = BenchCommand.provenance()
        let sweep: [[String: Any]] = points.map { p in
            [
                "bitrateBps": p.bitrateBps, "frames": p.frames, "angleRMSEDegrees": p.angleRMSEDegrees,
                "positionRMSEPixels": p.positionRMSEPixels,
                "angleRMSEVsTruthDegrees": p.angleRMSEVsTruthDegrees as Any? ?? NSNull(),
                "bytesPerSecond": p.bytesPerSecond, "missing": p.missing,
            ]
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
            try BitrateSweep.svg(
                points, angleBound: angleBound, chosen: chosen,
                title: "E-M2: shaft angle error against bitrate — \(format)"
            )
            .write(toFile: svg, atomically: false, encoding: .utf8)
        }
        if let path = inv.value("write") {
            guard let chosen else {
                throw CommandFailure.failure(
                    "no bitrate in the sweep stays within the bounds: no record written (try higher bitrates)")
            }
            let date = String((machine["date"] as? String ?? "").prefix(10))
            let cpu = ((machine["machine"] as? [String: Any])?["cpu"] as? String) ?? "this machine"
            do {
                try MeasurementFile.write(
                    to: path, key: "capture.videoBitrateBps", value: Double(chosen.bitrateBps), date: date,
                    instrument:
                        "ppc-tool measure bitrate (E-M2): lowest of \(bitrates.count) bitrates with shaft angle RMSE ≤ \(angleBound)° and offset ≤ \(positionBound) px against lossless, \(format), \(cpu)",
                    evidence: [
                        "sweep": sweep, "bounds": ["angleDegrees": angleBound, "positionPixels": positionBound],
                        "source": "\(spec) \(format)",
                        "referenceAngleRMSEVsTruthDegrees": referenceVsTruth as Any? ?? NSNull(),
                    ])
            } catch { throw CommandFailure.failure("\(path): \(error)") }
            result["record"] = path
        }
        var lines = [
            "E-M2 bitrate sweep: \(spec) \(format), \(reference.count) frames; shaft against the frames as captured (lossless)"
        ]
        if let r = referenceVsTruth {
            lines.append(
                String(
                    format: "  the finder itself, on lossless frames, against the script's true angle: %.3f° RMSE", r))
        }
        for p in points {
            lines.append(
                String(
                    format: "  %6.2f Mbit/s: angle RMSE %.3f°, offset RMSE %.2f px%@, %.0f kB/s, %d frames%@%@",
                    Double(p.bitrateBps) / 1e6, p.angleRMSEDegrees, p.positionRMSEPixels,
                    p.angleRMSEVsTruthDegrees.map { String(format: " (%.3f° vs truth)", $0) } ?? "",
                    p.bytesPerSecond / 1000, p.frames,
                    p.missing > 0 ? " (\(p.missing) without a shaft)" : "", p == chosen ? "  ← lowest within bound" : ""
                ))
        }
        lines.append(
            chosen.map { "chosen: \(Double($0.bitrateBps) / 1e6) Mbit/s (bound \(angleBound)°, \(positionBound) px)" }
                ?? "no bitrate in the sweep stays within the bound")
        if let w = inv.value("write") { lines.append("record written: \(w) (load it with --measured \(w))") }
        try BenchCommand.emit(result, json: inv.flag("json"), lines: lines)
        return chosen == nil ? .failure : .success
    }
}

extension MeasureCommand {
    struct Second {
        var atSeconds: Double
        /// Frames read so far.
        var frames: Int
        var cpuMsPerFrame: Double
        var rssBytes: Int64
        var celsius: Double?
    }

    static func sustained(_ inv: Invocation) throws -> ExitCode {
        let minutes = try inv.parsed("minutes", as: Double.self) ?? 40
        guard minutes > 0, minutes <= 24 * 60 else { throw CommandFailure.usage("--minutes must be 0…1440") }
        let seconds = minutes * 60
        let spec = inv.value("source") ?? "synthetic:640x360@120"
        let config = Configuration.defaults
        let (name, params) = try SelftestCommand.sourceStage(spec, seconds: seconds, pace: "realtime")
        let source = try Stages.make(
            VideoSource.self, named: name, kinds: [.videoSource], given: params, config: config)
        let encoderName = inv.value("encoder") ?? (source.format.pixelFormat.isCompressed ? "passthrough" : "x264")
        let encoder = try Stages.make(
            VideoEncoder.self, named: encoderName, kinds: [.encoder], given: [:], config: config)
        let tmp = NSTemporaryDirectory() + "ppc-sustained-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        let ring = try FragmentRing(
            directory: tmp,
            configuration: .init(
                capacity: Int(config[.fragmentCapacity]), durability: .fsync, fileExtension: encoder.fragmentExtension))
        let session = CaptureSession(
            source: source, encoder: encoder, ring: ring, timeline: nil, fragmentNs: config[.fragmentNs])
        let fps = source.format.framesPerSecond
        // Heat as Policy reads it (the zone that matters most, from /sys/class/thermal); nil where none is readable.
        let thermal = ThermalSensor(
            fairCelsius: config[.fairCelsius], seriousCelsius: config[.seriousCelsius],
            criticalCelsius: config[.criticalCelsius])
        var series: [Second] = []
        var checks = 0
        let wall0 = monotonicNowNs()
        var lastCPU = processCPUNs()
        var lastChecks = 0
        Terminal.err("measure sustained: \(spec) \(source.format) → \(encoderName) for \(minutes) min")
        // The stop check runs once per frame read: every `fps` of them (about a second) the run is sampled.
        let stats = try session.run(.init(dropLateFrames: true, durationNs: Int64(seconds * 1e9))) { _ in
            checks += 1
            if checks % fps == 0 {
                let cpu = processCPUNs()
                let frames = checks - lastChecks
                series.append(
                    Second(
                        atSeconds: Double(monotonicNowNs() - wall0) / 1e9, frames: checks,
                        cpuMsPerFrame: Double(cpu - lastCPU) / Double(max(1, frames)) / 1e6,
                        rssBytes: ProcessMemory.bytes("VmRSS") ?? 0,
                        celsius: thermal.read()?.hottestCelsius))
                lastCPU = cpu
                lastChecks = checks
                if series.count % 60 == 0 { Terminal.err("  \(series.count / 60) min: \(checks) frames read") }
            }
            return false
        }
        let achieved = stats.achievedFramesPerSecond
        let sustainedAll = stats.framesDroppedLate == 0 && stats.framesMissingAtSource == 0
        let rss = series.map(\.rssBytes)
        let afterWarm = series.count > 120 ? Array(rss.dropFirst(60)) : rss  // the first minute is warm-up
        let growth = (afterWarm.max() ?? 0) - (afterWarm.first ?? 0)
        let cpuSeries = series.map(\.cpuMsPerFrame)
        let firstMinute = cpuSeries.prefix(60)
        let lastMinute = cpuSeries.suffix(60)
        func mean<C: Collection>(_ c: C) -> Double where C.Element == Double {
            c.isEmpty ? 0 : c.reduce(0, +) / Double(c.count)
        }
        var result = BenchCommand.provenance()
        result["area"] = "measure sustained (E-M4)"
        result["pipeline"] = "\(spec) \(source.format) → \(encoderName) → fsynced ring, late frames dropped and counted"
        result["minutes"] = minutes
        result.merge(captureCounts(stats, requestedFps: Double(fps))) { _, b in b }
        result["sustained"] = sustainedAll
        result["cpuMsPerFrame"] = ["firstMinute": mean(firstMinute), "lastMinute": mean(lastMinute)]
        result["rssBytes"] = [
            "afterWarmUp": afterWarm.first ?? 0, "max": afterWarm.max() ?? 0, "growthAfterWarmUp": growth,
        ]
        result["celsius"] = series.compactMap(\.celsius).max() as Any? ?? "no thermal zone readable here"
        result["series"] = series.map {
            [
                "t": $0.atSeconds, "frames": $0.frames, "cpuMsPerFrame": $0.cpuMsPerFrame, "rssBytes": $0.rssBytes,
                "celsius": $0.celsius as Any? ?? NSNull(),
            ] as [String: Any]
        }
        if let svg = inv.value("svg") {
            try sustainedSVG(series, title: "E-M4: \(source.format) → \(encoderName), \(Int(minutes)) min").write(
                toFile: svg, atomically: false, encoding: .utf8)
        }
        if let path = inv.value("write") {
            let date = String((result["date"] as? String ?? "").prefix(10))
            let cpu = ((result["machine"] as? [String: Any])?["cpu"] as? String) ?? "this machine"
            do {
                try MeasurementFile.write(
                    // capture.expectedFrameRate is a whole number of frames a second: the rate held, rounded (the
                    // exact figure is in the evidence).
                    to: path, key: "capture.expectedFrameRate", value: achieved.rounded(), date: date,
                    instrument:
                        "ppc-tool measure sustained (E-M4): \(source.format) → \(encoderName) for \(minutes) min, \(stats.framesDroppedLate) late of \(stats.framesCaptured), \(cpu)",
                    evidence: [
                        "minutes": minutes, "achievedFps": achieved, "framesDroppedLate": stats.framesDroppedLate,
                        "framesEncoded": stats.framesEncoded,
                        "rssGrowthAfterWarmUpBytes": growth,
                        "cpuMsPerFrame": ["firstMinute": mean(firstMinute), "lastMinute": mean(lastMinute)],
                    ])
            } catch { throw CommandFailure.failure("\(path): \(error)") }
            result["record"] = path
        }
        result.removeValue(forKey: inv.flag("json") ? "none" : "series")
        try BenchCommand.emit(
            result, json: inv.flag("json"),
            lines: [
                "E-M4 sustained: \(spec) \(source.format) → \(encoderName) for \(minutes) min",
                String(
                    format: "  %.2f fps achieved of %d; %d dropped late, %d missing at the source — %@", achieved, fps,
                    stats.framesDroppedLate, stats.framesMissingAtSource, sustainedAll ? "sustained" : "NOT sustained"),
                String(
                    format: "  CPU per frame: %.3f ms in the first minute, %.3f ms in the last", mean(firstMinute),
                    mean(lastMinute)),
                "  resident memory after warm-up: \((afterWarm.first ?? 0) / 1_048_576) MiB, at most \((afterWarm.max() ?? 0) / 1_048_576) MiB (growth \(growth / 1024) KiB)",
                "  heat: "
                    + (series.compactMap(\.celsius).max().map { String(format: "%.1f °C at most", $0) }
                        ?? "no thermal zone readable here (nothing claimed)"),
            ])
        return sustainedAll ? .success : .failure
    }

    static func sustainedSVG(_ s: [Second], title: String) -> String {
        let w = 720.0
        let h = 360.0
        let left = 60.0
        let right = 60.0
        let top = 40.0
        let bottom = 40.0
        guard let end = s.last?.atSeconds, end > 0 else { return "<svg xmlns='http://www.w3.org/2000/svg'/>" }
        let cpuMax = max(0.001, s.map(\.cpuMsPerFrame).max() ?? 1) * 1.2
        let rssMax = Double(max(1, s.map(\.rssBytes).max() ?? 1)) * 1.2
        func x(_ t: Double) -> Double { left + t / end * (w - left - right) }
        func yc(_ v: Double) -> Double { top + (1 - v / cpuMax) * (h - top - bottom) }
        func yr(_ v: Int64) -> Double { top + (1 - Double(v) / rssMax) * (h - top - bottom) }
        var out =
            "<svg xmlns='http://www.w3.org/2000/svg' width='\(Int(w))' height='\(Int(h))' font-family='sans-serif' font-size='12'><rect width='100%' height='100%' fill='white'/>"
        out += "<text x='\(left)' y='20' font-size='14'>\(title)</text>"
        out += "<line x1='\(left)' y1='\(h - bottom)' x2='\(w - right)' y2='\(h - bottom)' stroke='black'/>"
        out +=
            "<polyline fill='none' stroke='#236' stroke-width='1.5' points='"
            + s.map { String(format: "%.1f,%.1f", x($0.atSeconds), yc($0.cpuMsPerFrame)) }.joined(separator: " ")
            + "'/>"
        out +=
            "<polyline fill='none' stroke='#c63' stroke-width='1.5' points='"
            + s.map { String(format: "%.1f,%.1f", x($0.atSeconds), yr($0.rssBytes)) }.joined(separator: " ") + "'/>"
        out +=
            "<text x='\(left)' y='\(top - 6)' fill='#236'>CPU ms per frame (max \(String(format: "%.2f", cpuMax / 1.2)))</text>"
        out +=
            "<text x='\(w - right - 220)' y='\(top - 6)' fill='#c63'>resident MiB (max \(Int(rssMax / 1.2 / 1_048_576)))</text>"
        out += "<text x='\(w / 2 - 30)' y='\(h - 10)'>\(Int(end / 60)) min</text></svg>"
        return out
    }
}

extension MeasureCommand {
    static func tof(_ inv: Invocation) throws -> ExitCode {
        let config = Configuration.defaults
        let c = config[.speedOfSoundMps]
        var result = BenchCommand.provenance()
        result["area"] = "measure tof (E-M5)"
        let metres: Double
        let sigma: Double
        let how: String
        var evidence: [String: Any] = ["speedOfSoundMps": c]
        if let d = try inv.parsed("distance", as: Double.self) {
            guard inv.value("file") == nil else { throw CommandFailure.usage("give --file or --distance, not both") }
            let u = try inv.parsed("uncertainty", as: Double.self) ?? 0.02
            guard d > 0, d <= 100, u > 0, u < d else {
                throw CommandFailure.usage("--distance must be 0…100 m and --uncertainty positive and smaller")
            }
            (metres, sigma, how) = (d, u, "a tape measure, entered by a person")
            evidence["method"] = how
        } else {
            guard let path = inv.value("file") else {
                throw CommandFailure.usage("give --file RECORDING (claps at the ball) or --distance METRES")
            }
            let pairs: [(soundNs: Int64, frameNs: Int64)]
            let intervalNs: Int64
            do { (pairs, intervalNs) = try claps(in: path, region: inv.value("region")) } catch let e as CommandFailure
            { throw e } catch {
                throw CommandFailure.dataError("\(path): \(error)")
            }
            guard !pairs.isEmpty else {
                throw CommandFailure.dataError(
                    "\(path): no clap both heard and seen (a sound onset within 60 ms after a change in the region)")
            }
            // The clap happened within the interval before the frame that first shows it: its best estimate is the
            // middle of that interval, uniform over it (σ = interval/√12), and the exposure offset moves the frame's time.
            let offset = config[.frameStartToExposureOffsetNs]
            let tofs = pairs.map { Double($0.soundNs - ($0.frameNs + offset - intervalNs / 2)) / 1e9 }
            let mean = tofs.reduce(0, +) / Double(tofs.count)
            let frameSigma = Double(intervalNs) / 1e9 / 12.0.squareRoot()
            metres = mean * c
            sigma = c * frameSigma / Double(tofs.count).squareRoot()
            how =
                "\(tofs.count) clap(s) at the ball: sound onset against the first frame showing it, ± half a frame each"
            evidence["method"] = how
            evidence["timesOfFlightMs"] = tofs.map { $0 * 1000 }
            evidence["frameIntervalMs"] = Double(intervalNs) / 1e6
            evidence["file"] = path
            result["claps"] = tofs.count
            result["timesOfFlightMs"] = tofs.map { $0 * 1000 }
        }
        result["micToBallMetres"] = metres
        result["uncertaintyMetres"] = sigma
        result["method"] = how
        if let path = inv.value("write") {
            guard metres >= 0, metres <= 100 else {
                throw CommandFailure.failure(
                    String(format: "%.2f m is not a mic-to-ball distance: no record written", metres))
            }
            let date = String((result["date"] as? String ?? "").prefix(10))
            do {
                try MeasurementFile.write(
                    to: path, key: "detect.micToBallDefaultMetres", value: (metres * 1000).rounded() / 1000, date: date,
                    instrument: "ppc-tool measure tof (E-M5): \(how), ± \(String(format: "%.3f", sigma)) m (1σ)",
                    evidence: evidence)
            } catch { throw CommandFailure.failure("\(path): \(error)") }
            result["record"] = path
        }
        var lines = [
            "mic to ball: \(String(format: "%.3f", metres)) m ± \(String(format: "%.3f", sigma)) m (1σ) — \(how)"
        ]
        if let t = result["timesOfFlightMs"] as? [Double] {
            lines.append("times of flight: " + t.map { String(format: "%.2f ms", $0) }.joined(separator: ", "))
        }
        if let w = inv.value("write") { lines.append("record written: \(w) (load it with --measured \(w))") }
        try BenchCommand.emit(result, json: inv.flag("json"), lines: lines)
        return .success
    }

    /// Every clap both heard and seen in a recording: (sound onset, first frame showing it), capture-clock ns, and the
    /// frame interval.
    static func claps(in path: String, region spec: String?) throws -> ([(soundNs: Int64, frameNs: Int64)], Int64) {
        // The picture: the mean absolute change of the region from one frame to the next; a change well above the
        // region's usual flicker is an event.
        let reader = try MediaReader(path)
        guard let v = reader.video else { throw CommandFailure.dataError("\(path): no video") }
        guard let rate = reader.audioSampleRate else { throw CommandFailure.dataError("\(path): no audio track") }
        let (w, h) = (v.width, v.height)
        var rx = w / 2 - w / 16
        var ry = h - h / 8
        var rw = w / 8
        var rh = h / 10
        if let spec {
            let n = spec.split(separator: ",").compactMap { Int($0) }
            guard n.count == 4, n[0] >= 0, n[1] >= 0, n[2] > 0, n[3] > 0, n[0] + n[2] <= w, n[1] + n[3] <= h else {
                throw CommandFailure.usage("--region '\(spec)': expected x,y,w,h inside \(w)x\(h)")
            }
            (rx, ry, rw, rh) = (n[0], n[1], n[2], n[3])
        }
        var frame = [UInt8](repeating: 0, count: w * h * 3 / 2 + 64)
        var previous: [UInt8]?
        var changes: [(timeNs: Int64, change: Double)] = []
        while let f = try frame.withUnsafeMutableBytes({ b -> (index: Int64, timeNs: Int64)? in
            let y = b.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return try reader.readVideo(luma: y, lumaStride: w, chroma: y + w * h, chromaStride: w)
        }) {
            var region = [UInt8](repeating: 0, count: rw * rh)
            for r in 0..<rh { for x in 0..<rw { region[r * rw + x] = frame[(ry + r) * w + rx + x] } }
            if let p = previous {
                var sum = 0
                for i in region.indices { sum += abs(Int(region[i]) - Int(p[i])) }
                changes.append((f.timeNs, Double(sum) / Double(region.count)))
            }
            previous = region
        }
        let sortedChanges = changes.map(\.change).sorted()
        let typical = sortedChanges.isEmpty ? 0 : sortedChanges[sortedChanges.count / 2]
        var events: [Int64] = []
        for c in changes where c.change > max(10, typical * 5) {
            if let last = events.last, c.timeNs - last < 300_000_000 { continue }  // one event per clap
            events.append(c.timeNs)
        }
        // The sound: every impact onset, to the sample, on the same clock.
        let audio = try MediaReader(path)
        var samples: [Float] = []
        var firstNs: Int64?
        var block = [Float](repeating: 0, count: 4096)
        while let b = try block.withUnsafeMutableBufferPointer({ try audio.readAudio(into: $0) }) {
            if firstNs == nil { firstNs = b.timeNs - b.firstSample * 1_000_000_000 / Int64(rate) }
            samples += block[0..<b.count]
        }
        let onsets = ImpactDetector(ImpactDetector.Settings(sampleRate: rate)).detect(in: samples)
            .map { (firstNs ?? 0) + $0.onsetSample * 1_000_000_000 / Int64(rate) }
        // Pair: the frame that first shows a clap comes at most one frame interval before its sound plus the flight (a
        // mic within 20 m): within −interval … +60 ms.
        let interval = Int64(1_000_000_000 / max(1, v.framesPerSecond))
        var pairs: [(soundNs: Int64, frameNs: Int64)] = []
        for e in events {
            if let s = onsets.first(where: { $0 - e >= -interval && $0 - e <= 60_000_000 }) { pairs.append((s, e)) }
        }
        return (pairs, interval)
    }
}
