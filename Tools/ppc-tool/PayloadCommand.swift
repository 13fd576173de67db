import Audio
import CLI
import Capture
import Config
import Foundation
import FragmentRing
import PayloadSource
import Syscall

/// `ppc-tool payload window|mint`: a SwingWindow cut from a ring directory at rest — after its session, or beside one
/// still running — around any instant the ring still holds: a swing the detector did not hear, the last seconds as a
/// replay buffer keeps them. The ring is only read (`RingAtRestPayloadSource`); the clip is remuxed, never re-encoded.
enum PayloadCommand {
    static let windowOptions: [Option] = [
        .value(
            "t0-ns", "ns",
            help:
                "The instant on the capture clock (as report.json's t0Ns and `ring inspect` give times): the window is t0 − pre … t0 + post."
        ),
        .value(
            "last", "s",
            help: "Instead: the last S seconds the ring holds, ending at its newest frame (a replay buffer)."),
        .value("pre", "s", help: "Seconds before t0 (default capture.clipPreNs)."),
        .value("post", "s", help: "Seconds after t0 (default capture.clipPostNs)."),
        jsonFlag,
    ]

    static let command = Command(
        "payload",
        abstract: "Cut a clip from a ring on disk around any instant it still holds (the ring is only read).",
        subcommands: [
            Command(
                "window", abstract: "Which fragments a window would take, and any gap in them (writes nothing).",
                options: windowOptions, arguments: [Argument("ring", help: "A ring directory (OUT/ring).")], run: window
            ),
            Command(
                "mint",
                abstract: "Write the window's clip: its fragments remuxed into a faststart MP4 starting on a keyframe.",
                discussion:
                    "Each fragment is linked or copied out and checked against its record first, so a session still writing the ring cannot hand over a recycled fragment. The clip is video only; the session's sound is kept beside the ring (OUT/audio-ring), and --miss writes the window's sound as a labelled miss: a swing the detector did not hear, its impact at t0, for `ppc-tool detect eval`.",
                options: windowOptions + [
                    .value("out", "file.mp4", help: "Where to write the clip (must not exist)."),
                    .value(
                        "miss", "dir",
                        help:
                            "Also write the window's sound to DIR as a labelled miss (miss-NAME.wav + miss-NAME.truth.json, the impact at t0's sample). Needs --t0-ns."
                    ),
                ],
                arguments: [Argument("ring", help: "A ring directory (OUT/ring).")], run: mint),
        ])

    /// The window the command line asks for, frozen over the ring, with t0 when one was given.
    static func frozen(_ inv: Invocation) throws -> (SwingWindow<RingAtRestPayloadSource>, t0Ns: Int64?) {
        let source: RingAtRestPayloadSource
        do { source = try RingAtRestPayloadSource(directory: inv.argument(0)!) } catch {
            throw CommandFailure.dataError(error.message)
        }
        let config = try ConfigCommand.configuration(inv)
        let maxSeconds = 86_400.0
        let pre = try inv.parsed("pre", in: 0.0...maxSeconds).map { Int64($0 * 1e9) } ?? config[.clipPreNs]
        let post = try inv.parsed("post", in: 0.0...maxSeconds).map { Int64($0 * 1e9) } ?? config[.clipPostNs]
        let t0 = try inv.parsed("t0-ns", in: -(Int64(1) << 60)...(Int64(1) << 60))
        let last = try inv.parsed("last", in: 0.001...maxSeconds)
        guard (t0 == nil) != (last == nil) else { throw CommandFailure.usage("give one of --t0-ns or --last") }
        let held = source.fragments
        guard let newest = held.last, let oldestKey = held.first(where: \.startsWithKeyframe) else {
            throw CommandFailure.dataError("\(source.directory): the ring holds no fragment of its current stream")
        }
        var start: Int64
        var end: Int64
        if let t0 {
            guard t0 >= oldestKey.startNs, t0 <= newest.endNs else {
                throw CommandFailure.dataError(
                    "\(source.directory): t0 \(t0) ns is not in the ring, which holds \(oldestKey.startNs)…\(newest.endNs) ns"
                )
            }
            (start, end) = (t0 - pre, t0 + post)
        } else {
            (start, end) = (newest.endNs - Int64(last! * 1e9), newest.endNs)
        }
        // As a session mints a shot heard sooner than its pre-roll after arming, or cut by the end of capture: from the
        // first frame the ring holds, to its last — and said.
        if start < oldestKey.startNs {
            let short = Double(oldestKey.startNs - start) / 1e9
            if let t0 {
                Terminal.err(
                    String(
                        format:
                            "ppc-tool: the ring holds only %.3f s before t0: the window starts at its oldest keyframe, %.3f s short of the pre-roll",
                        Double(t0 - oldestKey.startNs) / 1e9, short))
            } else {
                Terminal.err(
                    String(
                        format: "ppc-tool: the ring holds only %.3f s: the window is all of it, %.3f s short",
                        Double(end - oldestKey.startNs) / 1e9, short))
            }
            start = oldestKey.startNs
        }
        if end > newest.endNs {
            Terminal.err(
                String(
                    format:
                        "ppc-tool: the ring ends %.3f s after t0: the window is cut there, %.3f s short of the post-roll",
                    Double(newest.endNs - (t0 ?? start)) / 1e9, Double(end - newest.endNs) / 1e9))
            end = newest.endNs
        }
        do { return (try source.freeze(startNs: start, endNs: end), t0) } catch {
            throw CommandFailure.dataError("\(source.directory): \(error.message)")
        }
    }

    static func describe(_ w: SwingWindow<RingAtRestPayloadSource>, t0Ns: Int64?) -> [String: Any] {
        let first = w.fragments.first!.info
        let last = w.fragments.last!.info
        return [
            "startNs": w.startNs, "endNs": w.endNs, "t0Ns": t0Ns as Any? ?? NSNull(),
            "fragments": w.fragments.map {
                [
                    "sequence": "\($0.info.sequence)", "startNs": $0.info.startNs, "endNs": $0.info.endNs,
                    "frames": $0.info.frameCount,
                ] as [String: Any]
            },
            "firstFrameNs": first.startNs, "lastFragmentEndNs": last.endNs, "frames": w.frameCount,
            "gaps": w.gaps.map {
                ["after": "\($0.after)", "before": "\($0.before)", "missingNs": $0.missingNs] as [String: Any]
            },
        ]
    }

    static func say(_ w: SwingWindow<RingAtRestPayloadSource>, t0Ns: Int64?) {
        let first = w.fragments.first!.info
        let last = w.fragments.last!.info
        Terminal.out(
            "window [\(w.startNs), \(w.endNs)] ns: \(w.fragments.count) fragment(s) \(first.sequence)…\(last.sequence), \(w.frameCount) frames from \(first.startNs) ns (a keyframe)"
        )
        if let t0Ns {
            Terminal.out(
                String(format: "  t0 %lld ns is %.3f s into the clip", t0Ns, Double(t0Ns - first.startNs) / 1e9))
        }
        for g in w.gaps {
            Terminal.out(
                String(
                    format: "  gap: %.3f s missing between fragments %@ and %@", Double(g.missingNs) / 1e9,
                    "\(g.after)", "\(g.before)"))
        }
    }

    static func window(_ inv: Invocation) throws -> ExitCode {
        let (w, t0) = try frozen(inv)
        if inv.flag("json") { try printJSON(describe(w, t0Ns: t0)) } else { say(w, t0Ns: t0) }
        return .success
    }

    static func mint(_ inv: Invocation) throws -> ExitCode {
        guard let out = inv.value("out") else { throw CommandFailure.usage("--out FILE.mp4: where to write the clip") }
        if inv.value("miss") != nil, inv.value("t0-ns") == nil {
            throw CommandFailure.usage("--miss DIR labels a swing at t0: give --t0-ns, where its impact is")
        }
        guard !FileSystem.exists(out) else {
            throw CommandFailure.dataError("\(out) exists: a clip is never written over; name another")
        }
        let (w, t0) = try frozen(inv)
        let first = w.fragments[0].info
        let frameIntervalNs = first.frameCount > 0 ? max(1, (first.endNs - first.startNs) / Int64(first.frameCount)) : 1
        // Written beside its name and renamed: a clip is whole under its name or not there.
        let partial = out + ".partial.mp4"
        let clip: ClipMinter.Clip
        do {
            clip = try ClipMinter.mint(
                w, to: partial, frameIntervalNs: frameIntervalNs, fragmentExtension: w.backing.scan.fileExtension)
            try FileSystem.rename(partial, out)
        } catch {
            try? FileSystem.removeIfPresent(partial)
            throw CommandFailure.failure("\(out): \((error as? PayloadError)?.message ?? "\(error)")")
        }
        var miss: String?
        if let dir = inv.value("miss"), let t0 {
            miss = try labelledMiss(ring: inv.argument(0)!, window: w, t0Ns: t0, clip: out, to: dir)
        }
        if inv.flag("json") {
            var o = describe(w, t0Ns: t0)
            o["clip"] = out
            o["frames"] = clip.frames
            o["miss"] = miss as Any? ?? NSNull()
            try printJSON(o)
        } else {
            say(w, t0Ns: t0)
            Terminal.out("  clip: \(out) (\(clip.frames) frames)")
            if let miss { Terminal.out("  labelled miss: \(miss).wav + .truth.json (ppc-tool detect eval scores it)") }
        }
        return .success
    }

    /// The window's sound from the session's audio at rest, written as a labelled miss in `detect eval`'s format: its
    /// impact at t0's sample, placed by the same clock anchors the session placed t0 with. Returns the path without
    /// extension.
    static func labelledMiss(
        ring: String, window w: SwingWindow<RingAtRestPayloadSource>, t0Ns: Int64, clip: String, to dir: String
    )
        throws -> String
    {
        let audio = (ring as NSString).deletingLastPathComponent + "/" + AudioRingWriter.directoryName
        let cut: AudioRingAtRest.Cut
        do { cut = try AudioRingAtRest.read(directory: audio, fromNs: w.startNs, toNs: w.endNs) } catch {
            throw CommandFailure.dataError("\(error) — the clip \(clip) is written; no labelled miss")
        }
        let impact = Int(((Double(t0Ns - cut.firstSampleNs)) / cut.nsPerSample).rounded())
        guard cut.samples.indices.contains(impact) else {
            throw CommandFailure.dataError(
                "t0 \(t0Ns) ns falls outside the sound held for the window; no labelled miss")
        }
        do { try FileSystem.makeDirectory(dir) } catch { throw CommandFailure.dataError("\(dir): \(error)") }
        let name = "\(dir)/miss-" + ((clip as NSString).lastPathComponent as NSString).deletingPathExtension
        for p in [name + ".wav", name + ".truth.json"] where FileSystem.exists(p) {
            throw CommandFailure.dataError("\(p) exists: a label is never written over; name the clip otherwise")
        }
        let truth: [String: Any] = [
            "sampleRate": cut.sampleRate, "impacts": [impact], "events": [] as [Any],
            "source": "\(ring) at \(t0Ns) ns",
            "note":
                "a swing cut by hand from the ring (payload mint): the detector did not hear it; its impact at t0's sample",
        ]
        do {
            try FileSystem.writeAtomically(
                WAVWriter.data(samples: cut.samples, sampleRate: cut.sampleRate), to: name + ".wav")
            try FileSystem.writeAtomically(
                Array(try JSONSerialization.data(withJSONObject: truth, options: [.prettyPrinted, .sortedKeys])),
                to: name + ".truth.json")
        } catch { throw CommandFailure.failure("\(name): \(error)") }
        return name
    }
}
