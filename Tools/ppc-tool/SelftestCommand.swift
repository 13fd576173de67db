import ALSASource
import Benchmarks
import CLI
import Capture
import Config
import Detect
import Foundation
import FragmentRing
import Link
import Pipeline
import Synthetic
import Syscall
import V4L2
import V4L2Source

/// `ppc-tool selftest`: source → encoder → ring for a few seconds with late frames dropped and counted (seed 000
/// REQ-CAP-3: drops must be visible), reporting requested vs achieved frame rate and encode time per frame — each
/// figure measured, with date and machine — and saying plainly when this CPU cannot sustain the format.
enum SelftestCommand {
    static let command = Command(
        "selftest", abstract: "Can this machine capture this format? Measured, with drops counted.",
        discussion: """
            SOURCE is synthetic[:WxH@FPS] (default synthetic:1280x720@120), synthetic.mjpeg[:WxH@FPS] (Motion JPEG
            as a USB camera sends it, passed through; default 1920x1080@120), file:PATH, network:URL or
            v4l2:DEVICE[:WxH@FPS][:input=N] (a camera; without a mode, the one `capture card` says it would choose), or
            alsa:PCM (a microphone, e.g. alsa:hw:0,0: achieved rate, overruns, the card's drift against CLOCK_MONOTONIC,
            and every impact heard, with its capture-clock time).
            The run is short: a sustained rate over a long session is not measured by it (seed 000).
            """,
        options: [
            .value("manifest", "file", help: "Take the source, encoder and config from a manifest."),
            .value("source", "spec", help: "The source (see above)."),
            .value("encoder", "name", help: "Encoder plugin (default x264)."),
            .value("seconds", "s", help: "How long to run (default 3)."),
            setOption, measuredOption, jsonFlag,
        ], run: run)

    struct Setup {
        var source: VideoSource
        var encoder: VideoEncoder
        var config: Configuration
        var describe: String
    }

    /// A source SPEC as a plugin name and parameters.
    static func sourceStage(_ spec: String, seconds: Double, pace: String) throws -> (String, [String: JSONValue]) {
        if spec == "synthetic.mjpeg" || spec.hasPrefix("synthetic.mjpeg:") {
            var params: [String: JSONValue] = [
                "seconds": .number(seconds + 1, isInteger: false), "pace": .string(pace),
            ]
            if let mode = spec.split(separator: ":", maxSplits: 1).dropFirst().first {
                guard let m = CaptureProfile(mode), m.framesPerSecond == m.framesPerSecond.rounded() else {
                    throw CommandFailure.usage(
                        "--source '\(spec)': expected synthetic.mjpeg:WIDTHxHEIGHT@FPS (a whole number of frames a second)"
                    )
                }
                params["width"] = .number(Double(m.width), isInteger: true)
                params["height"] = .number(Double(m.height), isInteger: true)
                params["fps"] = .number(m.framesPerSecond, isInteger: true)
            }
            return ("synthetic.mjpeg", params)
        }
        if spec == "synthetic" || spec.hasPrefix("synthetic:") {
            var params: [String: JSONValue] = [
                "seconds": .number(seconds + 1, isInteger: false), "pace": .string(pace),
            ]
            if let mode = spec.split(separator: ":", maxSplits: 1).dropFirst().first {
                guard let m = CaptureProfile(mode), m.framesPerSecond == m.framesPerSecond.rounded() else {
                    throw CommandFailure.usage(
                        "--source '\(spec)': expected synthetic:WIDTHxHEIGHT@FPS (a whole number of frames a second)")
                }
                params["width"] = .number(Double(m.width), isInteger: true)
                params["height"] = .number(Double(m.height), isInteger: true)
                params["fps"] = .number(m.framesPerSecond, isInteger: true)
            } else {
                params["width"] = .number(1280, isInteger: true)
                params["height"] = .number(720, isInteger: true)
            }
            return ("synthetic.video", params)
        }
        if spec.hasPrefix("file:") { return ("file", ["path": .string(String(spec.dropFirst(5)))]) }
        if spec.hasPrefix("network:") { return ("network", ["url": .string(String(spec.dropFirst(8)))]) }
        if spec.hasPrefix("v4l2:") {
            // v4l2:DEVICE[:WxH@FPS][:input=N]
            let parts = spec.dropFirst(5).split(separator: ":").map(String.init)
            guard let device = parts.first, device.hasPrefix("/") else {
                throw CommandFailure.usage("--source '\(spec)': expected v4l2:/dev/videoN[:WxH@FPS][:input=N]")
            }
            var params: [String: JSONValue] = ["device": .string(device)]
            for p in parts.dropFirst() {
                if p.hasPrefix("input="), let n = Int(p.dropFirst(6)) {
                    params["input"] = .number(Double(n), isInteger: true)
                    continue
                }
                guard let m = CaptureProfile(p) else {
                    throw CommandFailure.usage("--source '\(spec)': '\(p)' is neither WIDTHxHEIGHT@FPS nor input=N")
                }
                params["width"] = .number(Double(m.width), isInteger: true)
                params["height"] = .number(Double(m.height), isInteger: true)
                params["fps"] = .number(m.framesPerSecond, isInteger: m.framesPerSecond == m.framesPerSecond.rounded())
            }
            return ("v4l2", params)
        }
        throw CommandFailure.usage(
            "--source '\(spec)': expected synthetic[:WxH@FPS], synthetic.mjpeg[:WxH@FPS], file:PATH, network:URL, v4l2:DEVICE[:WxH@FPS][:input=N] or alsa:PCM"
        )
    }

    static func setup(_ inv: Invocation, seconds: Double) throws -> Setup {
        let overrides = try commandLineOverrides(inv)
        var sourceName = "synthetic.video"
        var sourceParams: [String: JSONValue] = [:]
        var encoderName = inv.value("encoder") ?? "x264"
        var encoderParams: [String: JSONValue] = [:]
        var config: Configuration
        if let path = inv.value("manifest") {
            let m: Manifest
            do { m = try Manifest.load(path: path, registry: .default, extraOverrides: overrides) } catch {
                throw CommandFailure.dataError(error.description)
            }
            guard let video = m.sources.first(where: { $0.kind == .videoSource }) else {
                throw CommandFailure.dataError("\(path): no video source to test")
            }
            sourceName = video.plugin
            sourceParams = video.parameters.values
            if video.plugin == "synthetic.video" || video.plugin == "synthetic.mjpeg" {
                sourceParams["pace"] = .string("realtime")
            }
            if let e = m.encoder, inv.value("encoder") == nil {
                encoderName = e.plugin
                encoderParams = e.parameters.values
            }
            config = m.configuration
        } else {
            (sourceName, sourceParams) = try sourceStage(
                inv.value("source") ?? "synthetic", seconds: seconds, pace: "realtime")
            do { config = try Configuration(overrides: overrides) } catch {
                throw CommandFailure.dataError(error.description)
            }
        }
        let source = try Stages.make(
            VideoSource.self, named: sourceName, kinds: [.videoSource], given: sourceParams, config: config)
        if source.format.pixelFormat.isCompressed, inv.value("encoder") == nil, encoderName == "x264" {
            encoderName = "passthrough"
        }
        let encoder = try Stages.make(
            VideoEncoder.self, named: encoderName, kinds: [.encoder], given: encoderParams, config: config)
        return Setup(
            source: source, encoder: encoder, config: config,
            describe: "\(sourceName) \(source.format) → \(encoderName)")
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let seconds = try inv.parsed("seconds", in: 0.001...86_400.0) ?? 3
        if let spec = inv.value("source"), spec.hasPrefix("alsa:") {
            return try audio(inv, device: String(spec.dropFirst(5)), seconds: seconds)
        }
        let s = try setup(inv, seconds: seconds)
        let tmp = NSTemporaryDirectory() + "ppc-selftest-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        let ring = try FragmentRing(
            directory: tmp,
            configuration: .init(
                capacity: Int(s.config[.fragmentCapacity]), durability: .fsync,
                fileExtension: s.encoder.fragmentExtension))
        let session = CaptureSession(
            source: s.source, encoder: s.encoder, ring: ring, timeline: nil, fragmentNs: s.config[.fragmentNs])
        // CPU and resident memory over the armed run: RSS read about once a second (every `fps` frames) from the
        // capture thread's stop check — /proc costs tens of µs, far inside a frame's budget.
        let rssArmed = ProcessMemory.bytes("VmRSS") ?? 0
        var rssLow = rssArmed
        var rssHigh = rssArmed
        var checks = 0
        let every = max(1, s.source.format.framesPerSecond)
        let cpu0 = processCPUNs()
        let stats = try session.run(.init(dropLateFrames: true, durationNs: Int64(seconds * 1e9))) { _ in
            checks += 1
            if checks % every == 0, let r = ProcessMemory.bytes("VmRSS") {
                rssLow = min(rssLow, r)
                rssHigh = max(rssHigh, r)
            }
            return false
        }
        let cpuNs = processCPUNs() - cpu0
        let rssEnd = ProcessMemory.bytes("VmRSS") ?? 0
        let format = s.source.format
        let requested = Double(format.framesPerSecond)
        let offered = stats.framesCaptured
        let achieved = stats.achievedFramesPerSecond
        let sustained = stats.framesDroppedLate == 0 && stats.framesMissingAtSource == 0 && achieved >= requested * 0.98
        let pixelRate = achieved * Double(format.width * format.height)
        var suggestion = ""
        if !sustained {
            // Frame rate first (REQ-FPS-1): keep the rate, suggest the largest standard size this CPU managed.
            let sizes = [(1920, 1080), (1600, 900), (1280, 720), (960, 540), (854, 480), (640, 360)]
            if let fit = sizes.first(where: { Double($0.0 * $0.1) * requested <= pixelRate * 0.75 }) {
                suggestion =
                    "\(fit.0)x\(fit.1)@\(format.framesPerSecond) fits in what this CPU encoded (keeping the frame rate, seed 000 REQ-FPS-1)"
            } else {
                suggestion =
                    "no standard size at \(format.framesPerSecond) fps fits; a faster preset, a hardware encoder or a faster machine is needed"
            }
        }
        var result = BenchCommand.provenance()
        result["area"] = "selftest"
        result["pipeline"] = s.describe
        result["seconds"] = seconds
        result.merge(captureCounts(stats, requestedFps: requested)) { _, b in b }
        result["framesOffered"] = offered
        result["fragmentsPublished"] = stats.fragmentsPublished
        result["encodeMsPerFrame"] = [
            "mean": stats.encodeMeanNs / 1e6, "p50": Double(stats.encodeP50Ns) / 1e6,
            "p95": Double(stats.encodeP95Ns) / 1e6, "max": Double(stats.encodeMaxNs) / 1e6,
        ]
        result["capturePriority"] = stats.capturePriority
        result["cpuMsPerFrame"] = stats.framesCaptured > 0 ? Double(cpuNs) / Double(stats.framesCaptured) / 1e6 : 0
        result["cpuPercent"] = stats.wallNs > 0 ? Double(cpuNs) * 100 / Double(stats.wallNs) : 0
        result["rssBytes"] =
            [
                "armed": rssArmed, "lowest": rssLow, "highest": rssHigh, "end": rssEnd,
                "growth": max(rssHigh, rssEnd) - rssArmed,
            ] as [String: Any]
        // A raw source through a software encoder measures this machine's encode capacity: recorded, so a camera's
        // mode choice (raw, or its own Motion JPEG) uses the figure and says where it came from.
        if !format.pixelFormat.isCompressed, stats.framesEncoded > 0, stats.encodeP95Ns > 0,
            s.describe.hasSuffix("x264") || s.describe.hasSuffix("x265")
        {
            let capacity = EncodeCapacity(
                pixelsPerSecond: 0.75 * Double(format.width * format.height) * 1e9 / Double(stats.encodeP95Ns),
                provenance: "derived",
                what:
                    "\(s.describe.components(separatedBy: " → ").last ?? "") p95 encode time measured at \(format), 25% kept for capture and the session, selftest \(result["date"] ?? "") (\(result["build"] ?? "") build)"
            )
            do {
                try capacity.save()
                result["encodeCapacity"] =
                    ["megapixelsPerSecond": capacity.pixelsPerSecond / 1e6, "recordedAt": EncodeCapacity.defaultPath]
                    as [String: Any]
            } catch {
                result["encodeCapacity"] = "not recorded: \(error)"
            }
        }
        if let mj = s.source as? SyntheticMJPEGSource {
            result["prepared"] =
                [
                    "frames": mj.distinctFrames, "bytes": mj.preparedBytes, "seconds": Double(mj.preparationNs) / 1e9,
                    "note":
                        "JPEGs encoded before arming, as a camera's encoder would have; not part of the figures above",
                ] as [String: Any]
        }
        result["sustained"] = sustained
        result["verdict"] =
            sustained
            ? "this CPU sustains \(format) with \(s.describe.components(separatedBy: " → ").last ?? "")"
            : "this CPU cannot sustain \(format): \(stats.framesDroppedLate) of \(offered) frames were late and dropped, \(String(format: "%.1f", achieved)) fps of \(Int(requested)) achieved"
        if !suggestion.isEmpty { result["suggestion"] = suggestion }
        var cameraLines: [String] = []
        if let cam = s.source as? V4L2Source {
            result["camera"] =
                [
                    "device": cam.stream.path, "mode": "\(cam.stream.mode)", "why": cam.choiceWhy,
                    "rateHonoured": cam.stream.rateHonoured, "interval": "\(cam.stream.interval)",
                    "buffers": cam.stream.buffersGranted, "warm": cam.stream.warmReport,
                    "timestampSource": cam.timestampSource, "corruptFrames": cam.corruptFrames,
                    "exposureOffsetNs": s.config[.frameStartToExposureOffsetNs],
                    "exposureOffsetProvenance": s.config["capture.frameStartToExposureOffsetNs"].map {
                        "\($0.provenance)"
                    } ?? "",
                    "firstFrameNs": stats.firstFrameNs ?? 0, "lastFrameNs": stats.lastFrameNs ?? 0,
                    "timestampsMonotonic": stats.timestampsMonotonic,
                ] as [String: Any]
            cameraLines =
                [
                    "camera \(cam.stream.path): \(cam.stream.mode) — \(cam.choiceWhy)",
                    "  \(cam.stream.buffersGranted) mmap buffers; timestamps: \(cam.timestampSource)\(stats.timestampsMonotonic ? ", monotonic" : ", NOT monotonic")",
                ] + cam.stream.warmReport.map { "  warm: \($0)" }
        }
        result["note"] =
            "measured over \(seconds) s; a sustained rate under load over a long session is not measured here (seed 000: unknown)"
        try BenchCommand.emit(
            result, json: inv.flag("json"),
            lines: cameraLines + [
                "selftest: \(s.describe) for \(seconds) s",
                "requested \(Int(requested)) fps, achieved \(String(format: "%.1f", achieved)) fps; \(stats.framesEncoded) encoded, \(stats.framesDroppedLate) dropped late, \(stats.framesMissingAtSource) missing at the source",
                "encode per frame: mean \(String(format: "%.2f", stats.encodeMeanNs / 1e6)) ms, p95 \(String(format: "%.2f", Double(stats.encodeP95Ns) / 1e6)) ms (budget \(String(format: "%.2f", 1000 / requested)) ms)",
                "capture thread: \(stats.capturePriority)",
                "CPU (whole process): \(String(format: "%.3f", stats.framesCaptured > 0 ? Double(cpuNs) / Double(stats.framesCaptured) / 1e6 : 0)) ms per frame, \(String(format: "%.1f", stats.wallNs > 0 ? Double(cpuNs) * 100 / Double(stats.wallNs) : 0)) % of one core; resident \(rssArmed / 1_048_576) MiB at arming, \(max(rssHigh, rssEnd) / 1_048_576) MiB at most",
                (result["verdict"] as! String) + (suggestion.isEmpty ? "" : "; try \(suggestion)"),
            ]
                + ((result["encodeCapacity"] as? [String: Any]).map {
                    [
                        "this machine's encode capacity, \(String(format: "%.1f", $0["megapixelsPerSecond"] as? Double ?? 0)) Mpx/s, recorded in \($0["recordedAt"] ?? ""): a camera's raw mode beyond it yields to its MJPEG mode"
                    ]
                } ?? []))
        return sustained ? .success : .failure
    }
}

extension SelftestCommand {
    /// `selftest --source alsa:PCM`: the microphone alone for `seconds` — what rate the card achieved on the capture
    /// clock, its drift with its uncertainty, overruns and samples lost, CPU per period, and each impact heard.
    static func audio(_ inv: Invocation, device: String, seconds: Double) throws -> ExitCode {
        let overrides = try commandLineOverrides(inv)
        let config: Configuration
        do { config = try Configuration(overrides: overrides) } catch {
            throw CommandFailure.dataError(error.description)
        }
        let mic = try Stages.make(
            ALSASource.self, named: "alsa", kinds: [.audioSource], given: ["device": .string(device)], config: config)
        let rate = mic.sampleRate
        let detector = ImpactDetector(ImpactDetector.Settings(sampleRate: rate))
        var buffer = [Float](repeating: 0, count: mic.configuration.periodFrames)
        var heard: [[String: Any]] = []
        var lines: [String] = []
        var gaps: [[String: Any]] = []
        var expected: Int64 = 0
        var firstNs: Int64?
        var lastNs: Int64 = 0
        var firstFirst: Int64 = 0
        var lastFirst: Int64 = 0
        var delivered: Int64 = 0
        var periods = 0
        var started = false
        let cpu0 = processCPUNs()
        let wall0 = monotonicNowNs()
        do {
            while true {
                guard let b = try buffer.withUnsafeMutableBufferPointer({ try mic.read(into: $0) }) else { break }
                if !started {
                    detector.streamStartNs = b.timeNs
                    expected = b.firstSample
                    firstFirst = b.firstSample
                    started = true
                    // What a script waits for before it plays into the card (never a fixed sleep).
                    Terminal.err("selftest: alsa \(device) streaming: first period at sample \(b.firstSample)")
                }
                let first = firstNs ?? b.timeNs
                firstNs = first
                if b.timeNs - first >= Int64(seconds * 1e9) { break }
                if b.firstSample > expected {
                    detector.skip(b.firstSample - expected)
                    gaps.append(["firstSample": expected, "samples": b.firstSample - expected, "noticedNs": b.timeNs])
                    lines.append("overrun: \(b.firstSample - expected) samples lost at sample \(expected)")
                }
                expected = b.firstSample + Int64(b.count)
                delivered += Int64(b.count)
                periods += 1
                lastNs = b.timeNs
                lastFirst = b.firstSample
                buffer.withUnsafeBufferPointer { all in
                    detector.process(UnsafeBufferPointer(rebasing: all[0..<b.count])) { c in
                        let t0 = mic.captureTimeNs(ofSample: c.impactSample)
                        heard.append(["onsetSample": c.onsetSample, "t0Ns": t0, "score": c.score])
                        lines.append(
                            "impact: onset sample \(c.onsetSample), t0 \(t0) ns (CLOCK_MONOTONIC), score \(String(format: "%.2f", c.score))"
                        )
                    }
                }
            }
        } catch { throw CommandFailure.failure("\(error)") }
        let cpu = processCPUNs() - cpu0
        let wall = monotonicNowNs() - wall0
        let span = Double(lastNs - (firstNs ?? lastNs)) / 1e9
        let c = mic.configuration
        var result = BenchCommand.provenance()
        result["area"] = "selftest"
        result["source"] = "alsa \(device)"
        result["configuration"] = c.description
        result["seconds"] = seconds
        result["samplesDelivered"] = delivered
        result["overruns"] = mic.overruns
        result["samplesLost"] = mic.samplesLost
        result["gaps"] = gaps
        // Sample numbers advanced (lost ones included) per second of capture clock, first block to last.
        result["achievedRateHz"] = span > 0 ? Double(lastFirst - firstFirst) / span : 0
        result["fittedRateHz"] = mic.clock.ratePpm.map { Double(rate) * (1 + $0 / 1e6) } ?? NSNull()
        result["driftPpm"] = mic.clock.ratePpm ?? NSNull()
        result["driftUncertaintyPpm"] = mic.clock.uncertaintyPpm ?? NSNull()
        result["latencyBoundMs"] = Double(c.periodNs) / 1e6
        result["cpuPerPeriodUs"] = periods > 0 ? Double(cpu) / Double(periods) / 1e3 : 0
        result["cpuPercent"] = wall > 0 ? Double(cpu) * 100 / Double(wall) : 0
        result["impacts"] = heard
        result["note"] =
            "measured over \(seconds) s: rate and drift from the card's own timestamps (snd_pcm_status htstamp on CLOCK_MONOTONIC), the drift's uncertainty the fit's standard error; the latency bound is one period (samples reach the reader a period at a time)"
        let drift =
            mic.clock.ratePpm.map { String(format: "%+.2f ± %.2f ppm", $0, mic.clock.uncertaintyPpm ?? 0) }
            ?? "not fitted (run longer than 2 s)"
        try BenchCommand.emit(
            result, json: inv.flag("json"),
            lines: [
                "selftest: alsa \(c)",
                "\(delivered) samples in \(String(format: "%.2f", span)) s of capture clock; \(mic.overruns) overrun(s), \(mic.samplesLost) samples lost",
                "card clock against CLOCK_MONOTONIC: \(drift); latency bound \(String(format: "%.2f", Double(c.periodNs) / 1e6)) ms (one period)",
                "CPU: \(String(format: "%.1f", Double(cpu) / Double(max(1, periods)) / 1e3)) µs per period",
            ] + lines)
        return .success
    }
}

/// Makes pipeline stages from the registry, validating parameters as a manifest would.
enum Stages {
    static func make<T>(
        _ type: T.Type, named name: String, kinds: [PluginKind], given: [String: JSONValue], config: Configuration
    ) throws -> T {
        guard let factory = PluginRegistry.default.factory(named: name, kinds: kinds) else {
            let known = PluginRegistry.default.descriptors(kinds: kinds).map(\.name).joined(separator: ", ")
            throw CommandFailure.dataError(
                "no \(kinds.map(\.rawValue).joined(separator: "/")) plugin '\(name)'; known: \(known)")
        }
        var values: [String: JSONValue] = [:]
        for spec in factory.descriptor.parameters {
            if let v = given[spec.name] ?? spec.defaultValue {
                values[spec.name] = v
            } else {
                throw CommandFailure.dataError("\(name): missing required parameter '\(spec.name)' (\(spec.summary))")
            }
        }
        do {
            return try PluginRegistry.default.make(
                type, named: name, kinds: kinds, parameters: PluginParameters(values), config: config)
        } catch let e as CommandFailure {
            throw e
        } catch let e as RegistryError {  // names the plugin itself
            throw CommandFailure.dataError(e.message)
        } catch {
            throw CommandFailure.dataError("\(name): \(error)")
        }
    }
}
