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
    /// report.json, typed (`Document`).
    public let document: Document
    public let svg: String
    public let summary: String
    public let clips: [SessionRunner.MintedClip]
    public let errors: [String]

    /// Writes report.json and timeline.svg, each whole or not at all (written aside, then renamed): a full disk leaves
    /// the previous file or none, never an empty one, and the error names the file.
    public func write(to directory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try FileSystem.writeAtomically([UInt8](try encoder.encode(document)), to: "\(directory)/report.json")
        try FileSystem.writeAtomically(Array(svg.utf8), to: "\(directory)/timeline.svg")
    }
}

/// What a finished session reports: its figures read under the session's lock once every thread has ended, rendered as
/// report.json (every figure with its provenance), a summary and timeline.svg.
struct SessionReporter {
    typealias Figure = SessionReport.Figure
    typealias Document = SessionReport.Document
    typealias Gap = SessionReport.Gap
    typealias Thermal = SessionReport.Thermal
    typealias DiskFull = SessionReport.DiskFull
    typealias EncodeTime = SessionReport.EncodeTime
    typealias FirstLooks = SessionReport.FirstLooks
    typealias RelayedShots = SessionReport.RelayedShots
    typealias Clip = SessionReport.Clip
    typealias OwedClip = SessionReport.OwedClip
    typealias Interruption = SessionReport.Interruption
    typealias Candidate = SessionReport.Candidate

    unowned let runner: SessionRunner

    func report() -> SessionReport {
        runner.lock.lock()
        let stats = runner.captureStats
        // a clip the host took later from the outbox comes in its place
        let clipsNow = runner.clips.sorted { $0.t0Ns < $1.t0Ns }
        let owedNow = runner.owed
        // A clip still owed at the end is an error of the run (exit 1): it waits for `transfer drain`.
        let errorsNow =
            runner.errors + runner.mintFailures.map { "mint: \($0)" }
            + runner.owed.map {
                "mint: shot \($0.shotID) at t0 \($0.t0Ns) ns: \($0.clipID) not confirmed by every sink: \($0.refusedBy.joined(separator: "; "))"
            }
        let candidateCount = runner.book.seen
        let evicted = runner.book.evicted
        let shotList = runner.book.shots
        let candidateList = runner.book.retained
        let relayedNow = runner.relay.relayed.count
        let mergedNow = runner.relay.merged
        let looksNow = (sent: runner.looksSent, shed: runner.looksShed, why: runner.looksShedReasons)
        let interruptionList =
            runner.interruptions.map { ("video", $0) } + runner.audioInterruptions.map { ("audio", $0) }
        runner.lock.unlock()
        let c = runner.components.config
        let format = runner.components.video.format
        let wall = monotonicNowNs() - runner.wallStart
        let spanNs = (stats?.lastFrameNs ?? 0) - (stats?.firstFrameNs ?? 0) + format.frameIntervalNs
        let captured = stats?.framesCaptured ?? 0
        let encoded = stats?.framesEncoded ?? 0
        let dropped = (stats?.framesDroppedLate ?? 0) + (stats?.framesMissingAtSource ?? 0)
        let achieved = spanNs > 0 ? Double(encoded) * 1e9 / Double(spanNs) : 0
        let snapshot = runner.index.snapshot(startNs: .min, endNs: .max)
        let diskFull = runner.ring.diskFull
        let memory = ProcessMemory.bytes("VmHWM")
        let warnings = runner.policy.warnings
        let heat = runner.policy.thermal
        let thermal: Figure<Thermal> =
            heat.last.map { r in
                Figure(
                    Thermal(
                        levelAtEnd: r.level.description, celsiusAtEnd: r.hottestCelsius,
                        peakCelsius: heat.peakCelsius ?? r.hottestCelsius, zone: r.zone, basis: r.basis),
                    .measured, "the hottest thermal zone, read at policy.sampleHz")
            }
            ?? .unavailable(
                "no readable thermal zone under \(runner.options.thermalRoot): thermal state not monitored, nothing claimed"
            )
        runner.lock.lock()
        let notes = runner.policyNotes
        let gaps = runner.audioGaps
        let backlogBlocks = runner.audioBacklogDeepestBlocks
        let stops = runner.stopRequests
        runner.lock.unlock()
        let policyLines = runner.policy.history.map { $0.sentence } + notes
        let document = Document(
            session: runner.options.context.session, sessionId: runner.options.context.sessionID,
            device: runner.options.context.deviceID, output: runner.options.context.outputDirectory,
            stagingLeftoversRemoved: runner.removedStaging, unownedPinsReleased: runner.releasedPins,
            durationSeconds: Figure(Double(wall) / 1e9, .measured, "wall clock"),
            captureSeconds: Figure(Double(spanNs) / 1e9, .measured, "capture clock, first to last frame"),
            format: "\(format)", videoSource: runner.roles.videoDetailing?.details ?? [:],
            audioSource: runner.roles.audioDetailing?.details ?? [:],
            audioGaps: Figure(
                gaps.map(Gap.init), .measured,
                "samples the audio source lost (overruns), each skipped on its sample clock and on the timeline as an interruption"
            ),
            audioBacklogMaxMs: runner.components.audio == nil
                ? .unavailable("no audio source")
                : Figure(
                    backlogBlocks * 10, .measured,
                    "the most audio held at once between the source's reader and the detector (the block being worked on included), in 10 ms blocks (its queue holds \(SessionRunner.audioReadAheadBlocks / 100) s): for a live source (a sound card), how far detection fell behind the microphone at worst; a file or the synthetic source is read as fast as it can be, which fills the queue"
                ),
            imuSamples: runner.components.imu == nil
                ? .unavailable("no IMU source")
                : Figure(
                    runner.imuSamples.load(ordering: .relaxed), .measured,
                    "IMU samples put on the timeline (each clip holds those of its window)"),
            imuSamplesBeforeVideo: runner.components.imu == nil
                ? .unavailable("no IMU source")
                : Figure(
                    runner.imuSamplesBeforeVideo.load(ordering: .relaxed), .measured,
                    "IMU samples timed before the video's first frame: no clip holds them (a recording that starts earlier than the video, or an IMU on another clock)"
                ),
            framesCaptured: Figure(captured, .measured),
            framesEncoded: Figure(encoded, .measured),
            framesDropped: Figure(
                dropped, .measured, "late or missing at the source; a capture session drops none on purpose"),
            framesRefused: Figure(
                runner.roles.encoderRefusals?.framesRefused ?? 0, .measured,
                "frames the encoder could not store as they came (a torn or empty JPEG from the camera); counted, never stored"
            ),
            framesUnended: Figure(
                runner.roles.encoderRefusals?.framesUnended ?? 0, .measured,
                "frames stored as they came that end without a JPEG's end marker (FF D9): most likely cut short between the camera and this machine; a player shows what arrived"
            ),
            dropRate: Figure(
                captured > 0 ? Double(dropped) / Double(captured) : 0, .derived, "framesDropped / framesCaptured"),
            requestedFps: Figure(format.framesPerSecond, .vendor, "the source's declared format"),
            achievedFps: Figure(achieved, .derived, "framesEncoded / captureSeconds"),
            fragments: Figure(stats?.fragmentsPublished ?? 0, .measured),
            fragmentsRefused: Figure(stats?.fragmentsRefused ?? 0, .measured, "ring full of pinned, unconfirmed clips"),
            fragmentsCutAtPostRoll: Figure(
                stats?.fragmentCutsMade ?? 0, .measured,
                "fragments opened at a shot's post-roll end, so its clip was minted when the post-roll was captured (capture.sealPostRollEarly); \(stats?.fragmentCutsMissed ?? 0) not made: asked for too late, or still waiting when capture ended"
            ),
            diskFull: Figure(
                DiskFull(
                    events: diskFull.events, headroomReleasedBytes: diskFull.headroomReleasedBytes,
                    fragmentsGivenUp: diskFull.fragmentsGivenUp, headroomHeldBytes: diskFull.headroomHeldBytes),
                .measured,
                "writes that found the disk full; the ring's headroom given back, and its oldest fragments given up early, so capture went on"
            ),
            encodeMsPerFrame: Figure(
                EncodeTime(mean: (stats?.encodeMeanNs ?? 0) / 1e6, p95: Double(stats?.encodeP95Ns ?? 0) / 1e6),
                .measured),
            capturePriority: stats?.capturePriority ?? "",
            candidates: Figure(candidateCount, .measured),
            candidatesEvicted: Figure(
                evicted, .measured,
                "retention is bounded at detect.maxRetainedCandidates = \(c[.maxRetainedCandidates]); oldest evicted first"
            ),
            shots: Figure(
                shotList.count, .measured,
                "candidates with score ≥ \(runner.options.shotThreshold), and shots bay-mates heard that this device did not"
            ),
            firstLooks: Figure(
                FirstLooks(sent: looksNow.sent, notSent: looksNow.shed, why: looksNow.why), .measured,
                "each shot's pre-roll and impact, sent ahead of its clip as soon as the ring sealed them; never queued or resent"
            ),
            relayedShots: Figure(
                RelayedShots(minted: relayedNow, alsoHeardHere: mergedNow), .measured,
                "shots a host relayed from bay-mates: those minted from the relay, and those this device heard itself (one clip a swing)"
            ),
            clips: clipsNow.map(Clip.init),
            clipsOwed: owedNow.map {
                OwedClip(clipId: $0.clipID, t0Ns: $0.t0Ns, heldBy: $0.heldBy, refusedBy: $0.refusedBy)
            },
            maxAudioVideoDriftMs: Figure(
                Double(runner.audioDriftMaxNs + (stats?.maxTimestampDeviationNs ?? 0)) / 1e6, .measured,
                "bound on relative drift: each stream's largest deviation from its own nominal rate on the shared capture clock, summed (audio \(String(format: "%.3f", Double(runner.audioDriftMaxNs) / 1e6)) ms, video \(String(format: "%.3f", Double(stats?.maxTimestampDeviationNs ?? 0) / 1e6)) ms)"
            ),
            thermalWarnings: Figure(
                warnings.thermal, heat.last == nil ? .unavailable : .measured,
                "times the machine reached serious or critical; transfers then pause, and minting waits if it persists"),
            memoryWarnings: Figure(
                warnings.memory, .measured, "times resident memory rose above policy.memoryBudgetBytes"),
            storageWarnings: Figure(
                warnings.storage, .measured, "times free space fell below device.storageFloorBytes"),
            policy: policyLines, stopRequests: stops,
            interruptions: Figure(
                interruptionList.count, .measured,
                "a camera or microphone lost, or a stream stalled; each verified (frames or samples arriving, format unchanged) before armed again"
            ),
            interruptionList: interruptionList.map { Interruption(source: $0.0, $0.1) },
            thermal: thermal,
            peakMemoryBytes: memory.map { Figure($0, .measured, "VmHWM of this process") } ?? .unavailable(),
            errors: errorsNow, sinkStatus: runner.roles.sinkStatus.flatMap(\.statusHistory),
            candidateList: candidateList.map {
                Candidate(id: $0.id, t0Ns: $0.t0Ns, onsetSample: $0.onsetSample, score: $0.score)
            })
        let svg = timelineSVG(snapshot: snapshot, shots: shotList, clips: clipsNow, candidates: candidateList)
        var lines = [
            "session '\(runner.options.context.session)' on \(runner.options.context.deviceID): \(String(format: "%.1f", Double(wall) / 1e9)) s",
            "  video \(format): \(encoded) frames encoded of \(captured) captured, \(dropped) dropped, \(String(format: "%.1f", achieved)) fps achieved",
            "  \(stats?.fragmentsPublished ?? 0) fragments published into the ring (it keeps the newest \(runner.ring.configuration.capacity); \(stats?.fragmentsRefused ?? 0) refused)\((stats?.capturePriority).flatMap { $0.isEmpty ? nil : "; capture thread \($0)" } ?? "")",
            "  \(candidateCount) candidates, \(shotList.count) shots, \(clipsNow.count) clips"
                + (owedNow.isEmpty
                    ? "" : ", \(owedNow.count) more minted and owed to a sink that did not confirm them (below)"),
        ]
        for clip in clipsNow {
            lines.append(
                "    \(clip.path)  (t0 \(String(format: "%.3f", Double(clip.t0Ns) / 1e9)) s, \(clip.frames) frames, \(clip.bytes) bytes)"
            )
        }
        if let e = runner.roles.encoderRefusals, e.framesRefused + e.framesUnended > 0 {
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
        if runner.components.imu != nil {
            // An IMU whose clock is not the video's gives samples no clip holds: said, not left for a user to find.
            let taken = runner.imuSamples.load(ordering: .relaxed)
            let before = runner.imuSamplesBeforeVideo.load(ordering: .relaxed)
            let first = runner.imuFirstSampleNs.load(ordering: .relaxed)
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
        for s in runner.roles.sinkStatus.flatMap(\.statusHistory) {
            lines.append("  link: \(s)")
        }
        return SessionReport(
            document: document, svg: svg, summary: lines.joined(separator: "\n"), clips: clipsNow, errors: errorsNow)
    }

    /// The session on one time axis: audio envelope, fragments, candidates, shots and clip windows.
    func timelineSVG(
        snapshot: TimelineSnapshot, shots: [DetectedImpact], clips: [SessionRunner.MintedClip],
        candidates: [DetectedImpact]
    ) -> String {
        TimelinePicture(
            title: "ppc session '\(runner.options.context.session)'", envelope: runner.envelope.all,
            fragments: snapshot.entries(of: .videoFragment).map { ($0.timeNs, $0.timeNs + $0.value) },
            clips: clips.map { .init(label: $0.clipID, startNs: $0.startNs, endNs: $0.endNs) },
            shots: shots.map { ($0.id, $0.t0Ns) }, candidates: candidates.map(\.t0Ns)
        ).svg()
    }
}
