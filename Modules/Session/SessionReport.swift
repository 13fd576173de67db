import Capture
import Checksum
import Config
import Foundation
import FragmentRing
import PayloadSource
import Pipeline
import Policy
import Syscall
import TimelineIndex

/// What a session did, every figure with its provenance (seed 001's metrics, on ppc's terms).
public struct SessionReport {
    /// The report as JSON-serialisable Foundation values.
    public let json: [String: Any]
    public let svg: String
    public let summary: String
    public let clips: [SessionRunner.MintedClip]
    public let errors: [String]

    /// Writes report.json and timeline.svg, each whole or not at all (written aside, then renamed): a full disk leaves
    /// the previous file or none, never an empty one, and the error names the file.
    public func write(to directory: String) throws {
        let data = try JSONSerialization.data(
            withJSONObject: json, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try FileSystem.writeAtomically([UInt8](data), to: "\(directory)/report.json")
        try FileSystem.writeAtomically(Array(svg.utf8), to: "\(directory)/timeline.svg")
    }
}

/// A figure and where it came from.
func figure(_ value: Any, _ provenance: String, _ note: String? = nil) -> [String: Any] {
    var f: [String: Any] = ["value": value, "provenance": provenance]
    if let note { f["note"] = note }
    return f
}

extension SessionRunner {
    /// The clip's meta.json, every figure with its provenance (the bundle writer adds the files' sizes and XXH3).
    /// The sound track's figures: what it holds, and where it puts the strike — decoded from the clip just written and
    /// matched against the window it was made from (`ClipSoundCheck`).
    func soundTrackFigures(_ shot: DetectedImpact, clip: ClipMinter.Clip, audio: AudioWindow) -> ClipMeta.SoundTrack {
        let index = Double(shot.t0Ns - audio.firstSampleNs) / audio.nsPerSample
        let offset = ClipMinter.soundOffsetNs(
            clip, sound: .init(samples: audio.samples, sampleRate: audio.rate, firstSampleNs: audio.firstSampleNs),
            index: index,
            expectedNs: shot.t0Ns - clip.firstFrameNs)
        return ClipMeta.SoundTrack(
            codec: "aac", sampleRate: audio.rate,
            bitRate: .init(96_000, "assumed", "ample for one channel of a strike and a voice"),
            samples: clip.report.audioSamples,
            strikeOffsetNs: offset.map {
                .init(
                    $0, "measured",
                    "clip.mp4 decoded as a player decodes it (its edit list honoured), the strike found by cross-correlation with audio.wav"
                )
            })
    }

    func metadata(
        _ shot: DetectedImpact, clip: ClipMinter.Clip, window: SwingWindow<RingPayloadSource>, clipID: String,
        audio: AudioWindow?,
        soundTrack: ClipMeta.SoundTrack? = nil, trigger: String = "heard"
    ) -> ClipMeta {
        let c = components.config
        func given<V: Codable & Sendable & Equatable>(_ key: ConfigurationKey<V>, _ value: V, _ note: String? = nil)
            -> ClipMeta.Figure<V>
        {
            ClipMeta.Figure(value, c.parameter(key).provenance.mark.rawValue, note)
        }
        let format = components.video.format
        return ClipMeta(
            clipId: clipID, session: options.context.session, sessionId: options.context.sessionID,
            device: options.context.deviceID,
            t0Ns: .init(shot.t0Ns, "measured", "detector onset − time of flight, on the capture clock"),
            window: .init(
                startNs: window.startNs, endNs: window.endNs, firstFrameNs: clip.firstFrameNs,
                clipPreNs: given(.clipPreNs, c[.clipPreNs]), clipPostNs: given(.clipPostNs, c[.clipPostNs]),
                gaps: window.gaps.map {
                    .init(after: $0.after.rawValue, before: $0.before.rawValue, missingNs: $0.missingNs)
                }),
            frames: clip.frames,
            captureProfile: .init(
                width: format.width, height: format.height, framesPerSecond: format.framesPerSecond,
                pixelFormat: format.pixelFormat.rawValue, codec: window.fragments.first?.info.codec.description ?? "",
                videoBitrateBps: given(.videoBitrateBps, c[.videoBitrateBps]),
                fragmentSeconds: given(.fragmentSeconds, c[.fragmentSeconds]),
                frameStartToExposureOffsetNs: given(
                    .frameStartToExposureOffsetNs, c[.frameStartToExposureOffsetNs], "added to every frame time"),
                source: (components.video as? SourceDetailing)?.details ?? [:]),
            candidate: .init(
                id: shot.id, onsetSample: shot.onsetSample, impactSample: shot.impactSample, score: shot.score,
                features: shot.features,
                decidedAtSample: shot.decidedAtSample,
                shotRule: trigger == "heard"
                    ? "score ≥ \(options.shotThreshold) (the default rule)" : "a bay-mate's shot, relayed by the host"),
            tofCorrection: .init(samples: shot.tofCorrectionSamples, provenance: shot.tofProvenance),
            audio: audio.map {
                .init(
                    file: "audio.wav", sampleRate: $0.rate, firstSample: $0.firstSample, samples: $0.samples.count,
                    missingSamples: $0.missing,
                    windowNs: given(.audioWindowNs, c[.audioWindowNs]), preNs: given(.audioPreNs, c[.audioPreNs]),
                    firstSampleNs: .init(
                        $0.firstSampleNs, components.audio is SampleClockMapping ? "measured" : "derived",
                        components.audio is SampleClockMapping
                            ? "the card's sample clock, fitted against the capture clock"
                            : "the stream's first block time + samples at the nominal rate"),
                    nsPerSample: .init(
                        $0.nsPerSample, components.audio is SampleClockMapping ? "measured" : "derived",
                        components.audio is SampleClockMapping
                            ? "the same fit's sample period" : "1e9 / the nominal rate"))
            },
            soundTrack: soundTrack,
            timeline: .init(file: "index.bin", entries: window.timeline.entries.count), files: [:],
            createdAt: ISO8601DateFormatter().string(from: Date()), trigger: trigger)
    }

    func report() -> SessionReport {
        lock.lock()
        let stats = captureStats
        // a clip the host took later from the outbox comes in its place
        let clipsNow = clips.sorted { $0.t0Ns < $1.t0Ns }
        let owedNow = owed
        // A clip still owed at the end is an error of the run (exit 1): it waits for `transfer drain`.
        let errorsNow =
            errors + mintFailures.map { "mint: \($0)" }
            + owed.map {
                "mint: shot \($0.shotID) at t0 \($0.t0Ns) ns: \($0.clipID) not confirmed by every sink: \($0.refusedBy.joined(separator: "; "))"
            }
        let candidateCount = book.seen
        let evicted = book.evicted
        let shotList = book.shots
        let candidateList = book.retained
        let relayedNow = relay.relayed.count
        let mergedNow = relay.merged
        let looksNow = (sent: looksSent, shed: looksShed, why: looksShedReasons)
        let interruptionList = interruptions.map { ("video", $0) } + audioInterruptions.map { ("audio", $0) }
        lock.unlock()
        let c = components.config
        let format = components.video.format
        let wall = monotonicNowNs() - wallStart
        let spanNs = (stats?.lastFrameNs ?? 0) - (stats?.firstFrameNs ?? 0) + format.frameIntervalNs
        let captured = stats?.framesCaptured ?? 0
        let encoded = stats?.framesEncoded ?? 0
        let dropped = (stats?.framesDroppedLate ?? 0) + (stats?.framesMissingAtSource ?? 0)
        let achieved = spanNs > 0 ? Double(encoded) * 1e9 / Double(spanNs) : 0
        let snapshot = index.snapshot(startNs: .min, endNs: .max)
        let diskFull = ring.diskFull
        let memory = ProcessMemory.bytes("VmHWM")
        let warnings = policy.warnings
        let heat = policy.thermal
        let thermal: [String: Any] =
            heat.last.map { r in
                figure(
                    [
                        "levelAtEnd": r.level.description, "celsiusAtEnd": r.hottestCelsius,
                        "peakCelsius": heat.peakCelsius ?? r.hottestCelsius,
                        "zone": r.zone, "basis": r.basis,
                    ] as [String: Any],
                    "measured", "the hottest thermal zone, read at policy.sampleHz")
            }
            ?? figure(
                NSNull(), "unavailable",
                "no readable thermal zone under \(options.thermalRoot): thermal state not monitored, nothing claimed")
        lock.lock()
        let notes = policyNotes
        let gaps = audioGaps
        let backlogBlocks = audioBacklogDeepestBlocks
        let stops = stopRequests
        lock.unlock()
        let policyLines = policy.history.map { $0.sentence } + notes
        var json: [String: Any] = [
            "session": options.context.session, "sessionId": options.context.sessionID,
            "device": options.context.deviceID,
            "output": options.context.outputDirectory,
            "stagingLeftoversRemoved": removedStaging,
            "unownedPinsReleased": releasedPins,
            "durationSeconds": figure(Double(wall) / 1e9, "measured", "wall clock"),
            "captureSeconds": figure(Double(spanNs) / 1e9, "measured", "capture clock, first to last frame"),
            "format": "\(format)",
            "videoSource": (components.video as? SourceDetailing)?.details ?? [:],
            "audioSource": (components.audio as? SourceDetailing)?.details ?? [:],
            "audioGaps": figure(
                gaps.map {
                    [
                        "firstSample": $0.firstSample, "samples": $0.samples, "noticedNs": $0.noticedNs,
                        "reason": $0.reason,
                    ] as [String: Any]
                },
                "measured",
                "samples the audio source lost (overruns), each skipped on its sample clock and on the timeline as an interruption"
            ),
            "audioBacklogMaxMs": components.audio == nil
                ? figure(NSNull(), "unavailable", "no audio source")
                : figure(
                    backlogBlocks * 10, "measured",
                    "the most audio held at once between the source's reader and the detector (the block being worked on included), in 10 ms blocks (its queue holds \(Self.audioReadAheadBlocks / 100) s): for a live source (a sound card), how far detection fell behind the microphone at worst; a file or the synthetic source is read as fast as it can be, which fills the queue"
                ),
            "imuSamples": components.imu == nil
                ? figure(NSNull(), "unavailable", "no IMU source")
                : figure(
                    imuSamples.load(ordering: .relaxed), "measured",
                    "IMU samples put on the timeline (each clip holds those of its window)"),
            "imuSamplesBeforeVideo": components.imu == nil
                ? figure(NSNull(), "unavailable", "no IMU source")
                : figure(
                    imuSamplesBeforeVideo.load(ordering: .relaxed), "measured",
                    "IMU samples timed before the video's first frame: no clip holds them (a recording that starts earlier than the video, or an IMU on another clock)"
                ),
            "framesCaptured": figure(captured, "measured"),
            "framesEncoded": figure(encoded, "measured"),
            "framesDropped": figure(
                dropped, "measured", "late or missing at the source; a capture session drops none on purpose"),
            "framesRefused": figure(
                (components.encoder as? FrameRefusing)?.framesRefused ?? 0, "measured",
                "frames the encoder could not store as they came (a torn or empty JPEG from the camera); counted, never stored"
            ),
            "framesUnended": figure(
                (components.encoder as? FrameRefusing)?.framesUnended ?? 0, "measured",
                "frames stored as they came that end without a JPEG's end marker (FF D9): most likely cut short between the camera and this machine; a player shows what arrived"
            ),
            "dropRate": figure(
                captured > 0 ? Double(dropped) / Double(captured) : 0, "derived", "framesDropped / framesCaptured"),
            "requestedFps": figure(format.framesPerSecond, "vendor", "the source's declared format"),
            "achievedFps": figure(achieved, "derived", "framesEncoded / captureSeconds"),
            "fragments": figure(stats?.fragmentsPublished ?? 0, "measured"),
            "fragmentsRefused": figure(
                stats?.fragmentsRefused ?? 0, "measured", "ring full of pinned, unconfirmed clips"),
            "diskFull": figure(
                [
                    "events": diskFull.events, "headroomReleasedBytes": diskFull.headroomReleasedBytes,
                    "fragmentsGivenUp": diskFull.fragmentsGivenUp, "headroomHeldBytes": diskFull.headroomHeldBytes,
                ] as [String: Any],
                "measured",
                "writes that found the disk full; the ring's headroom given back, and its oldest fragments given up early, so capture went on"
            ),
            "encodeMsPerFrame": figure(
                ["mean": (stats?.encodeMeanNs ?? 0) / 1e6, "p95": Double(stats?.encodeP95Ns ?? 0) / 1e6], "measured"),
            "capturePriority": stats?.capturePriority ?? "",
            "candidates": figure(candidateCount, "measured"),
            "candidatesEvicted": figure(
                evicted, "measured",
                "retention is bounded at detect.maxRetainedCandidates = \(c[.maxRetainedCandidates]); oldest evicted first"
            ),
            "shots": figure(
                shotList.count, "measured",
                "candidates with score ≥ \(options.shotThreshold), and shots bay-mates heard that this device did not"),
            "firstLooks": figure(
                ["sent": looksNow.sent, "notSent": looksNow.shed, "why": looksNow.why] as [String: Any], "measured",
                "each shot's pre-roll and impact, sent ahead of its clip as soon as the ring sealed them; never queued or resent"
            ),
            "relayedShots": figure(
                ["minted": relayedNow, "alsoHeardHere": mergedNow] as [String: Any], "measured",
                "shots a host relayed from bay-mates: those minted from the relay, and those this device heard itself (one clip a swing)"
            ),
            "clips": clipsNow.map {
                var c: [String: Any] = [
                    "clipId": $0.clipID, "path": $0.path, "t0Ns": $0.t0Ns, "startNs": $0.startNs, "endNs": $0.endNs,
                    "frames": $0.frames, "bytes": $0.bytes, "confirmedBy": $0.confirmedBy,
                ]
                // On the capture clock, from t0 (meaningful when it is CLOCK_MONOTONIC: a camera, or a synthetic source started now).
                if let t = $0.timing {
                    c["afterT0Ms"] = [
                        "mintStart": Double(t.mintStartNs) / 1e6, "minted": Double(t.mintedNs) / 1e6,
                        "confirmed": Double(t.confirmedNs) / 1e6,
                    ]
                }
                return c
            },
            "clipsOwed": owedNow.map {
                ["clipId": $0.clipID, "t0Ns": $0.t0Ns, "heldBy": $0.heldBy, "refusedBy": $0.refusedBy] as [String: Any]
            },
            "maxAudioVideoDriftMs": figure(
                Double(audioDriftMaxNs + (stats?.maxTimestampDeviationNs ?? 0)) / 1e6, "measured",
                "bound on relative drift: each stream's largest deviation from its own nominal rate on the shared capture clock, summed (audio \(String(format: "%.3f", Double(audioDriftMaxNs) / 1e6)) ms, video \(String(format: "%.3f", Double(stats?.maxTimestampDeviationNs ?? 0) / 1e6)) ms)"
            ),
            "thermalWarnings": figure(
                warnings.thermal, heat.last == nil ? "unavailable" : "measured",
                "times the machine reached serious or critical; transfers then pause, and minting waits if it persists"),
            "memoryWarnings": figure(
                warnings.memory, "measured", "times resident memory rose above policy.memoryBudgetBytes"),
            "storageWarnings": figure(
                warnings.storage, "measured", "times free space fell below device.storageFloorBytes"),
            "policy": policyLines,
            "stopRequests": stops,
            "interruptions": figure(
                interruptionList.count, "measured",
                "a camera or microphone lost, or a stream stalled; each verified (frames or samples arriving, format unchanged) before armed again"
            ),
            "interruptionList": interruptionList.map { source, i in
                [
                    "source": source, "id": i.id, "startNs": i.startNs, "endNs": i.endNs.map { $0 as Any } ?? NSNull(),
                    "reason": i.reason, "verified": i.verified,
                ] as [String: Any]
            },
            "thermal": thermal,
            "peakMemoryBytes": memory.map { figure($0, "measured", "VmHWM of this process") }
                ?? figure(NSNull(), "unavailable"),
            "errors": errorsNow,
            "sinkStatus": components.sinks.compactMap { $0 as? SinkStatusReporting }.flatMap(\.statusHistory),
        ]
        json["candidateList"] = candidateList.map {
            ["id": $0.id, "t0Ns": $0.t0Ns, "onsetSample": $0.onsetSample, "score": $0.score] as [String: Any]
        }
        let svg = timelineSVG(snapshot: snapshot, shots: shotList, clips: clipsNow, candidates: candidateList)
        var lines = [
            "session '\(options.context.session)' on \(options.context.deviceID): \(String(format: "%.1f", Double(wall) / 1e9)) s",
            "  video \(format): \(encoded) frames encoded of \(captured) captured, \(dropped) dropped, \(String(format: "%.1f", achieved)) fps achieved",
            "  \(stats?.fragmentsPublished ?? 0) fragments published into the ring (it keeps the newest \(ring.configuration.capacity); \(stats?.fragmentsRefused ?? 0) refused)\((stats?.capturePriority).flatMap { $0.isEmpty ? nil : "; capture thread \($0)" } ?? "")",
            "  \(candidateCount) candidates, \(shotList.count) shots, \(clipsNow.count) clips"
                + (owedNow.isEmpty
                    ? "" : ", \(owedNow.count) more minted and owed to a sink that did not confirm them (below)"),
        ]
        for clip in clipsNow {
            lines.append(
                "    \(clip.path)  (t0 \(String(format: "%.3f", Double(clip.t0Ns) / 1e9)) s, \(clip.frames) frames, \(clip.bytes) bytes)"
            )
        }
        if let e = components.encoder as? FrameRefusing, e.framesRefused + e.framesUnended > 0 {
            lines.append(
                "  ⚠ camera frames: \(e.framesRefused) refused (not a JPEG: empty or torn), \(e.framesUnended) stored but cut short (no JPEG end marker) — check the camera's cable and USB bandwidth"
            )
        }
        if warnings.thermal + warnings.memory + warnings.storage > 0 {
            lines.append(
                "  ⚠ warnings: thermal \(warnings.thermal), memory \(warnings.memory), storage \(warnings.storage)")
        }
        for p in policyLines where !p.hasPrefix("thermal nominal") { lines.append("  policy: \(p)") }
        for s in stops { lines.append("  stopped: \(s)") }
        for (source, i) in interruptionList {
            let span =
                i.endNs.map { String(format: "%.2f s, then verified", Double($0 - i.startNs) / 1e9) } ?? "not resumed"
            lines.append("  ⚠ \(source) interruption \(i.id): \(i.reason) (\(span))")
        }
        if diskFull.events > 0 {
            lines.append(
                "  ⚠ the disk was full \(diskFull.events) times: capture went on on the ring's headroom (\(diskFull.headroomReleasedBytes) bytes given back) and \(diskFull.fragmentsGivenUp) of its oldest fragments given up early"
            )
        }
        if components.imu != nil {
            // An IMU whose clock is not the video's gives samples no clip holds: said, not left for a user to find.
            let taken = imuSamples.load(ordering: .relaxed)
            let before = imuSamplesBeforeVideo.load(ordering: .relaxed)
            let first = imuFirstSampleNs.load(ordering: .relaxed)
            if taken > 0 && before == taken {
                lines.append(
                    "  ⚠ imu: all \(taken) samples are timed before the video's first frame: no clip holds them — is the IMU on the video's clock? (file.imu's offsetNs places a recording)"
                )
            } else if taken == 0 && first != .min && spanNs > 0 {
                lines.append(
                    "  ⚠ imu: no sample within the capture: the first, at \(first) ns, lies past the video's end — is the IMU on the video's clock? (file.imu's offsetNs places a recording)"
                )
            }
        }
        for e in errorsNow { lines.append("  ⚠ \(e)") }
        for s in components.sinks.compactMap({ $0 as? SinkStatusReporting }).flatMap(\.statusHistory) {
            lines.append("  link: \(s)")
        }
        return SessionReport(
            json: json, svg: svg, summary: lines.joined(separator: "\n"), clips: clipsNow, errors: errorsNow)
    }

    /// The session on one time axis: audio envelope, fragments, candidates, shots and clip windows.
    func timelineSVG(
        snapshot: TimelineSnapshot, shots: [DetectedImpact], clips: [MintedClip], candidates: [DetectedImpact]
    ) -> String {
        TimelinePicture(
            title: "ppc session '\(options.context.session)'", envelope: envelope.all,
            fragments: snapshot.entries(of: .videoFragment).map { ($0.timeNs, $0.timeNs + $0.value) },
            clips: clips.map { .init(label: $0.clipID, startNs: $0.startNs, endNs: $0.endNs) },
            shots: shots.map { ($0.id, $0.t0Ns) }, candidates: candidates.map(\.t0Ns)
        ).svg()
    }
}
