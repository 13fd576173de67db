import ALSA
import Audio
import CLI
import Foundation
import Media
import V4L2

/// `ppc-tool capture devices|card|play`: the cameras and microphones this machine has, what one camera can do — every
/// format with its sizes and rates, and the mode ppc would choose and why (frame rate first, seed 000 REQ-FPS-1) — and
/// a sound played through a card with the capture-clock time of its every sample (the truth a loopback test needs).
enum CaptureCommand {
    static let command = Command(
        "capture",
        abstract: "Cameras (V4L2) and microphones (ALSA): list them, read a camera's capability card, play a sound.",
        subcommands: [
            Command(
                "devices",
                abstract:
                    "Every V4L2 video-capture node under /dev (card name, the mode ppc would choose) and every ALSA capture device (rates, formats, channels).",
                options: [jsonFlag, .value("dev", "dir", help: "Where to look (default /dev).")], run: devices),
            Command(
                "card",
                abstract: "One device's capability card: inputs, formats, sizes, rates, controls, and ppc's choice.",
                options: [
                    jsonFlag,
                    .value("input", "n", help: "Only modes on this input."),
                    .value("size", "WxH", help: "Only modes of this size."),
                    .value("fps", "rate", help: "Only modes at this rate."),
                ],
                arguments: [Argument("device", help: "e.g. /dev/video0")], run: card),
            Command(
                "play",
                abstract:
                    "Play an audio file through an ALSA device and say when each sample was played, on CLOCK_MONOTONIC.",
                discussion: """
                    The file (anything libavformat reads) is played mono S16 at its own rate. The card's playback position is
                    read with every period (snd_pcm_status, monotonic htstamp) and fitted like a capture clock, so the output
                    gives sample 0's time and the card's rate: sample k was played at firstSampleNs + k × nsPerSample, for k from
                    validFromSample (after an underrun the card paused, and the fit holds from where it resumed).
                    """,
                options: [jsonFlag, .value("period-ms", "ms", help: "Period (default 5).")],
                arguments: [
                    Argument("device", help: "e.g. hw:Loopback,0,0"), Argument("file", help: "An audio file."),
                ], run: play),
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
                let choice = ModeSelection.choose(c.modes, capacity: EncodeCapacity.load())
                found.append([
                    "device": path, "card": c.capability.card, "driver": c.capability.driver,
                    "bus": c.capability.busInfo,
                    "inputs": c.inputs.count, "modes": c.modes.count, "choice": choice.mode.map { "\($0)" } ?? NSNull(),
                ])
                lines.append(
                    "\(path): \(c.capability.card) (\(c.capability.driver), \(c.capability.busInfo)) — \(c.modes.count) modes; ppc would choose \(choice.mode.map { "\($0)" } ?? "none: \(choice.why)")"
                )
            } catch  where error.kind == .unsupported {
                // metadata and output nodes share the name
                lines.append("\(path): not a capture device (\(error.detail))")
            } catch {
                found.append(["device": path, "error": "\(error)"])
                lines.append("\(path): \(error)")
            }
        }
        var audio: [[String: Any]] = []
        let mics = SoundCards.captureDevices()
        for m in mics {
            audio.append([
                "device": m.name, "card": m.cardName, "cardIndex": m.cardIndex, "pcm": m.deviceName, "rates": m.rates,
                "rateRange": m.rateRange.map { [$0.lowerBound, $0.upperBound] } ?? NSNull(), "formats": m.formats,
                "channels": m.channels.map { [$0.lowerBound, $0.upperBound] } ?? NSNull(),
                "problem": m.problem ?? NSNull(),
            ])
            lines.append(
                "\(m.name): \(m.cardName) — \(m.deviceName) (capture): "
                    + (m.problem
                        ?? "rates \(m.rates.map(String.init).joined(separator: ", ")) Hz, \(m.formats.joined(separator: "/")), \(m.channels.map { "\($0.lowerBound)–\($0.upperBound)" } ?? "?") channel(s)")
            )
        }
        if inv.flag("json") {
            try printJSON(["video": found, "audio": audio] as [String: Any])
        } else {
            if names.isEmpty { lines.insert("no video devices under \(dir)", at: 0) }
            if mics.isEmpty { lines.append("no ALSA capture devices (no sound card, or /dev/snd not readable)") }
            for l in lines { Terminal.out(l) }
        }
        return .success
    }

    static func play(_ inv: Invocation) throws -> ExitCode {
        let device = inv.argument(0)!
        let path = inv.argument(1)!
        let periodMs = try inv.parsed("period-ms", in: 0.5...100.0) ?? 5
        let samples: [Float]
        let rate: Int
        do { (samples, rate) = try MediaReader.wholeAudio(path) } catch {
            throw CommandFailure.dataError(error.description)
        }
        let pcm: PCM
        do {
            pcm = try PCM(
                device: device, direction: .playback, sampleRate: rate, channels: 1, formats: [.s16],
                periodFrames: max(16, Int(periodMs * Double(rate) / 1000)), periods: 16)
        } catch { throw CommandFailure.failure("\(error)") }
        let c = pcm.configuration
        guard c.sampleRate == rate, c.channels == 1 else {
            throw CommandFailure.failure(
                "\(device) opened at \(c.sampleRate) Hz, \(c.channels) ch; the file is \(rate) Hz mono (use plughw: to convert)"
            )
        }
        var clock = SampleClock(nominalRate: rate, horizonPoints: 1 << 20, minimumSpanSeconds: 1)
        var pcm16 = [Int16](repeating: 0, count: c.periodFrames)
        var written: Int64 = 0
        var underruns = 0
        var validFrom: Int64 = 0
        var at = 0
        // Trailing silence of two buffers so the last samples are played (and timed) before the drain.
        let total = samples.count + 2 * c.bufferFrames
        while at < total {
            let n = min(c.periodFrames, total - at)
            for i in 0..<n {
                let k = at + i
                pcm16[i] = k < samples.count ? Int16(max(-32768, min(32767, (samples[k] * 32768).rounded()))) : 0
            }
            let r = pcm16.withUnsafeBytes { pcm.writeInterleaved($0.baseAddress!, frames: n) }
            if r < 0 {
                // An underrun paused the card: samples written after it are played later than the fit so far says, so
                // the fit starts again and the output says from which sample it holds.
                underruns += 1
                do { try pcm.recover(r) } catch { throw CommandFailure.failure("\(error)") }
                clock = SampleClock(nominalRate: rate, horizonPoints: 1 << 20, minimumSpanSeconds: 1)
                validFrom = written
                continue
            }
            at += r
            written += Int64(r)
            if let p = try? pcm.clockPoint(framesTransferred: written) {
                clock.add(position: p.position, timeNs: p.timeNs)
            }
        }
        pcm.drain()
        guard let first = clock.timeNs(ofSample: 0) else {
            throw CommandFailure.failure("\(device): the card gave no playback timestamps")
        }
        let result: [String: Any] = [
            "device": device, "file": path, "sampleRate": rate, "samples": samples.count,
            "configuration": c.description,
            "firstSampleNs": first, "nsPerSample": clock.slope, "ratePpm": clock.ratePpm ?? NSNull(),
            "uncertaintyPpm": clock.uncertaintyPpm ?? NSNull(), "clockPoints": clock.points, "underruns": underruns,
            "validFromSample": validFrom,
            "provenance": "measured: snd_pcm_status htstamp (CLOCK_MONOTONIC) and delay at every period, fitted",
        ]
        if inv.flag("json") {
            try printJSON(result)
        } else {
            Terminal.out("played \(samples.count) samples of \(path) through \(c)")
            Terminal.out(
                "sample 0 at \(first) ns (CLOCK_MONOTONIC); \(String(format: "%.3f", clock.slope)) ns/sample; \(underruns) underrun(s)\(underruns > 0 ? ", times hold from sample \(validFrom)" : "")"
            )
        }
        return .success
    }

    static func card(_ inv: Invocation) throws -> ExitCode {
        let path = inv.argument(0)!
        var constraints = ModeConstraints()
        constraints.input = try inv.parsed("input", in: 0...1023)
        constraints.framesPerSecond = try inv.parsed("fps", in: 0.01...100_000.0)
        if let size = try inv.frameSize("size") {
            constraints.width = size.width
            constraints.height = size.height
        }
        let c: CapabilityCard
        do { c = try CapabilityCard.read(try V4L2Device(path: path)) } catch {
            throw CommandFailure.failure("\(error)")
        }
        let capacity = EncodeCapacity.load()
        if inv.flag("json") {
            try printJSON(c.json(constraints: constraints, capacity: capacity))
        } else {
            for l in c.lines(constraints: constraints, capacity: capacity) { Terminal.out(l) }
        }
        return ModeSelection.choose(c.modes, constraints, capacity: capacity).mode == nil ? .failure : .success
    }
}
