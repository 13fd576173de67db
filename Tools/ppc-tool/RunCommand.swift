import CLI
import Config
import FileSink
import Foundation
import Pipeline
import Session
import Syscall

/// `ppc-tool run MANIFEST`: the main job — capture, detect, mint clips, report.
enum RunCommand {
    static let command = Command(
        "run", abstract: "Run a pipeline manifest: capture into the ring, detect impacts, mint clips, write a report.",
        discussion: """
            Writes OUT/ring/ (the fragment ring), OUT/clips/<clipId>/, OUT/report.json and OUT/timeline.svg.
            Ctrl-C or SIGTERM ends a run whose source would not end by itself: the first once the swings heard have their
            post-roll (their clips minted, the report written, exit 0), a second at once, a third with no report.
            """,
        options: [
            Option.value("out", "dir", help: "Where the session's output goes (default ./out)."),
            Option.value("duration", "seconds", help: "Stop after this long (default: the end of the source)."),
            Option.value(
                "device-id", "id",
                help:
                    "This device's name in bundles and reports: a plain name (default: the host name, else machine-<machine-id>)."
            ),
            Option.value("host", "host:port", help: "Point the manifest's network sink at this ppc-host."),
            Option.value(
                "bay", "name",
                help:
                    "The bay this device stands at: the host relays every shot one of a bay's devices hears to the others (a bay set on the host wins)."
            ),
            Option.value("clock-offset-ns", "ns", help: "Inject a device clock offset (tests know the truth)."),
            Option.value("clock-skew-ppm", "ppm", help: "Inject a device clock skew."),
            Option.value(
                "preview-fps", "n",
                help: "Send the host a live preview at most N times a second (newest frame only, never queued)."),
            Option.value(
                "thermal-root", "dir",
                help: "Where Policy reads thermal zones (default /sys/class/thermal; tests point it at their own)."),
            Option.value(
                "delivery-timeout", "seconds",
                help: "How long each clip's delivery to the host may take, reconnects included (default 60)."),
            Option.value(
                "state", "dir", help: "This device's identity and pinned hosts (default $XDG_STATE_HOME/ppc)."),
            Option.flag(
                "insecure-loopback-only",
                help: "Plaintext to a loopback host, for benches and tests; refused for any other address."),
            setOption, measuredOption,
        ],
        arguments: [Argument("manifest", help: "The pipeline manifest (JSON).")], run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let path = inv.argument(0)!
        // a year: a bay's run is long, not endless by number
        let duration = try inv.parsed("duration", in: 0.001...(365 * 86_400.0))
        let overrides = try commandLineOverrides(inv)
        let manifest: Manifest
        do { manifest = try Manifest.load(path: path, registry: .default, extraOverrides: overrides) } catch {
            throw CommandFailure.dataError(error.description)
        }
        let out = inv.value("out") ?? "out"
        let device = try deviceID(inv)
        // One run per output directory: a second would write the same ring and outbox.
        let hold = try holdOutputDirectory(out, purpose: "ppc-tool run \(path)")
        defer { hold.release() }
        let config = manifest.configuration
        for stage in manifest.sources where stage.plugin.hasPrefix("synthetic") {
            let seconds =
                stage.parameters.values["seconds"].flatMap { if case .number(let x, _) = $0 { x } else { nil } } ?? 12
            if let d = duration, d > seconds {
                Terminal.out(
                    "ppc-tool run: --duration \(ParameterValue.format(d)) s is longer than \(stage.plugin)'s script (\(ParameterValue.format(seconds)) s): the script repeats, its swings every \(ParameterValue.format(seconds)) s"
                )
            }
        }
        let problems = config.validate()
        guard problems.isEmpty else { throw CommandFailure.dataError(problems.map(\.message).joined(separator: "\n")) }

        func make<T>(_ stage: Manifest.Stage, as type: T.Type) throws -> T {
            try Stages.make(
                type, named: stage.plugin, kinds: [stage.kind], given: repeating(stage, for: duration), config: config)
        }
        guard let videoStage = manifest.sources.first(where: { $0.kind == .videoSource }) else {
            throw CommandFailure.dataError("\(path): sources: a run needs a video source")
        }
        let video = try make(videoStage, as: VideoSource.self)
        var audio = try manifest.sources.first { $0.kind == .audioSource }.map { try make($0, as: AudioSource.self) }
        // A file or network source carries its own audio track.
        if audio == nil, let both = video as? AudioSource, both.sampleRate > 0 { audio = both }
        let imu = try manifest.sources.first { $0.kind == .imuSource }.map { try make($0, as: IMUSource.self) }
        // Without an encoder named: compressed frames pass through (seed 000: never re-encode what a camera encoded),
        // planes go to x264.
        let encoder: VideoEncoder =
            try manifest.encoder.map { try make($0, as: VideoEncoder.self) }
            ?? Stages.make(
                VideoEncoder.self, named: video.format.pixelFormat.isCompressed ? "passthrough" : "x264",
                kinds: [.encoder], given: [:],
                config: config)
        let detector = try manifest.detector.map { try make($0, as: ImpactDetecting.self) }
        var hostOverride: [String: JSONValue] = [:]
        if let h = inv.value("host") {
            let endpoint = try Endpoint(h, option: "host")
            let (host, port) = (endpoint.host, endpoint.port)
            guard manifest.sinks.contains(where: { $0.plugin == "network" }) else {
                throw CommandFailure.usage("--host: \(path) has no network sink to point at \(h)")
            }
            hostOverride = ["host": .string(host), "port": .number(Double(port), isInteger: true)]
        }
        if let o = try inv.parsed("clock-offset-ns", in: Int64(-86_400_000_000_000)...86_400_000_000_000) {
            hostOverride["clockOffsetNs"] = .number(Double(o), isInteger: true)
        }
        if let k = try inv.parsed("clock-skew-ppm", in: -1000.0...1000.0) {
            hostOverride["clockSkewPpm"] = .number(k, isInteger: false)
        }
        if let f = try inv.parsed("preview-fps", in: 0.0...1000.0) {
            hostOverride["previewFps"] = .number(f, isInteger: false)
        }
        if let t = try inv.parsed("delivery-timeout", in: 1.0...(30 * 86_400.0)) {
            hostOverride["deliverySeconds"] = .number(t, isInteger: false)
        }
        if let state = inv.value("state") { hostOverride["stateDirectory"] = .string(state) }
        if inv.flag("insecure-loopback-only") { hostOverride["insecureLoopbackOnly"] = .bool(true) }
        var sinks: [ClipSink] = try manifest.sinks.map { stage in
            let given =
                stage.plugin == "network"
                ? stage.parameters.values.merging(hostOverride) { _, b in b } : stage.parameters.values
            return try Stages.make(ClipSink.self, named: stage.plugin, kinds: [.sink], given: given, config: config)
        }
        if sinks.isEmpty { sinks = [FileSink(directory: nil)] }
        if detector == nil {
            Terminal.err(
                sinks.contains(where: { $0 is ShotRelaying })
                    ? "ppc-tool run: no detector in \(path): clips are minted for the shots a host relays from this device's bay-mates"
                    : "ppc-tool run: no detector in \(path): nothing will be detected, so no clips will be minted")
        }
        let bay = inv.value("bay")
        if let bay, let why = PlainName.problem(bay, what: "--bay") { throw CommandFailure.usage(why) }

        let runner: SessionRunner
        do {
            runner = try SessionRunner(
                .init(
                    video: video, audio: audio, imu: imu, encoder: encoder, detector: detector, sinks: sinks,
                    config: config),
                options: .init(
                    context: {
                        var context = SessionContext(
                            outputDirectory: out, deviceID: device, session: manifest.session,
                            captureProfile:
                                "\(video.format.width)x\(video.format.height)@\(video.format.framesPerSecond) \(video.format.pixelFormat.isCompressed ? video.format.pixelFormat.rawValue : (manifest.encoder?.plugin ?? "x264"))"
                        )
                        context.bay = bay
                        return context
                    }(),
                    durationNs: duration.map { Int64($0 * 1e9) },
                    thermalRoot: inv.value("thermal-root") ?? "/sys/class/thermal"))
        } catch {
            throw CommandFailure.failure("cannot prepare \(out): \(error)")
        }
        Terminal.out(
            "ppc: session '\(manifest.session)' — \(videoStage.plugin) \(video.format) → \(manifest.encoder?.plugin ?? (video.format.pixelFormat.isCompressed ? "passthrough" : "x264")) → ring (\(config[.fragmentCapacity]) × \(ParameterValue.format(config[.fragmentSeconds])) s) · output \(out)/"
        )

        // Ctrl-C (or a supervisor's SIGTERM) ends a session whose source would not end by itself (a camera) without
        // losing the swing just heard: the first waits for the shots' post-roll, a second stops at once, a third exits.
        let post = Double(config[.clipPostNs] + SessionRunner.stopHearingMarginNs) / 1e9
        let stops = try Signals.watchStopRequests { signal, count in
            switch count {
            case 1:
                Terminal.err(
                    "\nppc-tool run: \(signal): stopping once the shots heard have their post-roll (at most \(String(format: "%.2f", post)) s); again to stop at once"
                )
                runner.requestStop(.afterPostRoll, reason: signal)
            case 2:
                Terminal.err(
                    "\nppc-tool run: \(signal) again: stopping at once; a clip still owed is cut at the end of capture")
                runner.requestStop(.now, reason: "\(signal) again")
            default:
                Terminal.err(
                    "\nppc-tool run: \(signal) a third time: exiting now, with no report; the next run on \(out) clears what this one left half-made"
                )
                Signals.exitNow(130)
            }
        }
        defer { stops.cancel() }

        // The session runs on its own threads; this one shows progress until it ends.
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<SessionReport, any Error>?
        Thread {
            result = Result { try runner.run() }
            done.signal()
        }.start()
        // A terminal gets the line redrawn twice a second. A log (a service's journal, a pipe) gets a line when the
        // state, candidates, shots or clips change, and otherwise one every 10 s: a day's run is a few thousand lines,
        // not 170 000.
        let tty = isatty(1) == 1
        var lastPrinted: (what: String, wallNs: Int64)?
        while done.wait(timeout: .now() + 0.5) == .timedOut {
            let p = runner.progress
            // Fragments beyond capacity are pinned for clips being minted or owed to a host: said apart from the window.
            let window = min(p.ringFragments, p.ringCapacity)
            let line = String(
                format: "  %@  %5.1f s  %5d frames (%5.1f fps)  ring %2d/%d%@  candidates %d  shots %d  clips %d%@%@",
                p.state.description, Double(p.wallNs) / 1e9, p.framesEncoded,
                p.wallNs > 0 ? Double(p.framesEncoded) * 1e9 / Double(p.wallNs) : 0,
                window, p.ringCapacity, p.ringFragments > window ? " +\(p.ringFragments - window) pinned" : "",
                p.candidates, p.shots,
                p.clips, p.owed > 0 ? " (+\(p.owed) owed to the host)" : "",
                p.interruptions > 0 ? "  interruptions \(p.interruptions) (\(p.resumed) resumed)" : "")
            if tty {
                Terminal.progress(line)
                continue
            }
            let what = "\(p.state) \(p.candidates) \(p.shots) \(p.clips) \(p.owed) \(p.interruptions) \(p.resumed)"
            if let last = lastPrinted, last.what == what, p.wallNs - last.wallNs < 10_000_000_000 { continue }
            lastPrinted = (what, p.wallNs)
            Terminal.out(line)
        }
        if tty { Terminal.out("") }
        let report: SessionReport
        switch result! {
        case .success(let r): report = r
        case .failure(let e): throw CommandFailure.failure("session failed: \(e)")
        }
        try report.write(to: out)
        Terminal.out(report.summary)
        Terminal.out("  report:   \(out)/report.json\n  timeline: \(out)/timeline.svg\n  ring:     \(out)/ring/")
        return report.errors.isEmpty ? .success : .failure
    }
}

/// A synthetic source's parameters for a run of `duration` seconds: as given when its script is as long; else the script
/// repeats — `seconds` becomes the duration and its impacts come again every script length — so `--duration 90` on a
/// 12 s script is 90 s of swings, not 12 s and then nothing. Other sources: as given.
func repeating(_ stage: Manifest.Stage, for duration: Double?) -> [String: JSONValue] {
    var given = stage.parameters.values
    guard stage.plugin.hasPrefix("synthetic"), let duration else { return given }
    let seconds = given["seconds"].flatMap { if case .number(let x, _) = $0 { x } else { nil } } ?? 12
    guard duration > seconds, seconds > 0 else { return given }
    let impacts =
        given["impacts"].flatMap { value -> [Double]? in
            guard case .array(let items) = value else { return nil }
            return items.compactMap { if case .number(let x, _) = $0.value { x } else { nil } }
        } ?? [2.5, 5.5, 8.5]  // the synthetic sources' default script
    var all: [Double] = []
    var k = 0.0
    while k * seconds < duration {
        all += impacts.map { $0 + k * seconds }.filter { $0 < duration }
        k += 1
    }
    given["seconds"] = .number(duration, isInteger: false)
    given["impacts"] = .array(all.map { JSONNode(.number($0, isInteger: false)) })
    return given
}
