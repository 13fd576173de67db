import Capture
import Config
import Foundation
import FragmentRing
import PayloadSource
import Pipeline
import Policy
import Syscall

/// The mint thread's stage (lowered priority): each shot waits until the ring holds its post-roll (and its audio
/// window, unless it was relayed), then its window is frozen (pinned) and minted into a staged bundle — clip.mp4 with its
/// sound, audio.wav, index.bin, meta.json — and queued for the delivery thread, which then owns the window's pin. A
/// disk that fills while capturing defers the shot until capture ends and the ring's headroom is free for it.
final class Minter: @unchecked Sendable {
    // @unchecked: it holds nothing of its own; what it reads and writes of the session is behind the session's lock.
    unowned let session: SessionRunner

    init(session: SessionRunner) { self.session = session }

    func run() {
        ThreadPriority.lowerCurrent()
        defer {
            session.lock.lock()
            session.mintingDone = true
            session.lock.broadcast()
            session.lock.unlock()
        }
        let c = session.components.config
        let pre = c[.clipPreNs]
        let post = c[.clipPostNs]
        let live = RingPayloadSource(ring: session.ring, index: session.index)
        while true {
            session.lock.lock()
            // Wait for a shot whose post-roll the ring now holds, or for the end.
            var ready: DetectedImpact?
            while ready == nil {
                if let s = session.book.nextShot, session.newestFragmentEndNs >= s.t0Ns + post || session.videoDone,
                    session.audioWindows[s.id] != nil || session.audioDone || session.relay.isRelayed(s.id),
                    !mintMustWait(s, pre: pre)
                {
                    ready = session.book.takeNextShot()
                    break
                }
                if session.book.nextShot == nil && session.videoDone && session.audioDone { break }
                session.lock.wait()
            }
            // A shot heard after the video ended (its audio ran ahead: a file, or a stop) has no picture of its impact:
            // no clip is minted of the swing without it, and the report says so.
            let unseen = ready.map { session.videoDone && session.newestFragmentEndNs <= $0.t0Ns } ?? false
            if let shot = ready, unseen {
                session.policyNotes.append(
                    String(
                        format: "shot %llu at t0 %.3f s: no clip, capture ended %.3f s before its impact", shot.id,
                        Double(shot.t0Ns) / 1e9,
                        Double(shot.t0Ns - session.newestFragmentEndNs) / 1e9))
            }
            session.lock.unlock()
            guard let shot = ready else { break }
            if unseen { continue }
            do {
                try mint(shot, live: live, pre: pre, post: post)
            } catch  where ClipMinter.isDiskFull(error) && stillCapturing {
                // The disk is full (another writer filled it): the shot waits, its fragments kept in the ring, and is
                // minted again when capture ends and the ring's headroom is free for it.
                session.lock.lock()
                session.deferredForSpace.append((shot, "\(error)"))
                session.policyNotes.append(
                    "shot \(shot.id): the disk was full while minting (\(error)); tried again when capture ends")
                session.lock.unlock()
            } catch {
                session.lock.lock()
                session.mintFailures.append("shot \(shot.id) at t0 \(shot.t0Ns) ns: \(error)")
                session.lock.unlock()
            }
        }
        session.lock.lock()
        let deferred = session.deferredForSpace
        session.deferredForSpace = []
        session.lock.unlock()
        guard !deferred.isEmpty else { return }
        // Capture is over, so the ring's headroom is no longer needed to keep it going: it makes room for these.
        session.ring.releaseHeadroom()
        for (shot, first) in deferred {
            do {
                try mint(shot, live: live, pre: pre, post: post)
            } catch {
                session.lock.lock()
                session.mintFailures.append(
                    "shot \(shot.id) at t0 \(shot.t0Ns) ns: \(error) (first try, while capturing: \(first))")
                session.lock.unlock()
            }
        }
    }

    /// True until the video source has ended (read under `lock`).
    var stillCapturing: Bool {
        session.lock.lock()
        defer { session.lock.unlock() }
        return !session.videoDone
    }

    /// Policy may ask minting to wait (persistent heat), but never so long that the ring recycles the shot's
    /// fragments: within two fragments of that, or at the end of capture, the clip is minted anyway and that is said.
    /// Called under `lock` (each published fragment wakes the mint loop to ask again).
    func mintMustWait(_ shot: DetectedImpact, pre: Int64) -> Bool {
        guard session.policy.stance >= .transferAndMintPaused, !session.videoDone else { return false }
        // The ring keeps its newest `capacity` fragments: two publishes from now the fragments before this one are
        // recycled. Read from the ring, not from ringSeconds: a shot's post-roll cut makes a fragment shorter.
        let live = session.ring.fragments
        let danger = live.count + 2 - session.ring.configuration.capacity
        let oldestKept = danger > 0 && danger < live.count ? live[danger].startNs : .min
        if shot.t0Ns - pre <= oldestKept {
            if !session.mintForced.contains(shot.id) {
                session.mintForced.insert(shot.id)
                session.policyNotes.append(
                    "shot \(shot.id) minted while policy asked minting to wait: the ring was about to recycle its fragments"
                )
            }
            return false
        }
        return true
    }

    /// Mints `shot`'s clip into a staged bundle and queues it for the delivery thread, which then owns the window's pin.
    func mint(_ shot: DetectedImpact, live: RingPayloadSource, pre: Int64, post: Int64) throws {
        let clipID = session.options.context.clipID(shot: shot.id)
        // A shot whose post-roll runs past the end of capture (the session stopped first) is minted with what the ring
        // holds, and says so, rather than lost.
        session.lock.lock()
        let captureEndNs = session.videoDone ? session.newestFragmentEndNs : Int64.max
        let captureStartNs = session.firstFragmentStartNs ?? .min
        session.lock.unlock()
        let endNs = min(shot.t0Ns + post, captureEndNs)
        if endNs < shot.t0Ns + post {
            session.lock.lock()
            session.policyNotes.append(
                String(
                    format: "shot %llu: post-roll cut to %.3f s by the end of capture (asked %.3f s)", shot.id,
                    Double(endNs - shot.t0Ns) / 1e9, Double(post) / 1e9))
            session.lock.unlock()
        }
        // Likewise a shot heard sooner after capture started than its pre-roll: minted from the first frame, and said.
        let startNs = max(shot.t0Ns - pre, min(captureStartNs, shot.t0Ns))
        if startNs > shot.t0Ns - pre {
            session.lock.lock()
            session.policyNotes.append(
                String(
                    format: "shot %llu: pre-roll cut to %.3f s by the start of capture (asked %.3f s: %.3f ms short)",
                    shot.id,
                    Double(shot.t0Ns - startNs) / 1e9, Double(pre) / 1e9, Double(startNs - (shot.t0Ns - pre)) / 1e6))
            session.lock.unlock()
        }
        IMUStage(runner: session).waitForIMU(reaching: endNs)
        let mintStart = monotonicNowNs()
        let window = try live.freeze(startNs: startNs, endNs: endNs)
        // A mint that fails releases its pin: no bundle reached a sink, so there is nothing to drain, and a shot tried
        // again pins its window anew.
        var queued = false
        defer { if !queued { try? live.release(window) } }
        let bundle = try ClipBundleWriter(out: session.options.context.outputDirectory, clipID: clipID)
        session.lock.lock()
        let audio = session.audioWindows[shot.id]  // the candidate keeps its window while it is retained
        let trigger = session.relay.trigger(of: shot.id)
        session.lock.unlock()
        // The sound goes into clip.mp4 too, a track a browser plays with the swing; audio.wav stays the lossless truth.
        let clip = try ClipMinter.mint(
            window, to: bundle.videoPath, frameIntervalNs: session.components.video.format.frameIntervalNs,
            fragmentExtension: session.components.encoder.fragmentExtension,
            sound: audio.map {
                ClipMinter.Sound(samples: $0.samples, sampleRate: $0.rate, firstSampleNs: $0.firstSampleNs)
            })
        if let audio { try bundle.writeAudio(audio.samples, sampleRate: audio.rate) }
        try bundle.writeTimeline(window.timeline)
        let sound = audio.map { soundTrackFigures(shot, clip: clip, audio: $0) }
        let sizes = try bundle.finish(
            metadata(
                shot, clip: clip, window: window, clipID: clipID, audio: audio, soundTrack: sound, trigger: trigger)
        ).values.map { UInt64($0) }
        for e in session.roles.eventSinks {
            e.announce(clipID: clipID, bytes: sizes.reduce(0, +), files: sizes.count)
        }
        session.lock.lock()
        session.deliveries.append(
            Delivery(
                shot: shot, clipID: clipID, staging: bundle.directory, window: window, clip: clip,
                mintStartNs: mintStart, mintedNs: monotonicNowNs()))
        queued = true
        session.lock.broadcast()
        session.lock.unlock()
        session.options.observe?(.minted(clipID: clipID, shot: shot.id))
    }

    /// The clip's meta.json, every figure with its provenance (the bundle writer adds the files' sizes and XXH3).
    /// The sound track's figures: what it holds, and where it puts the strike — decoded from the clip just written and
    /// matched against the window it was made from (`ClipSoundCheck`).
    func soundTrackFigures(_ shot: DetectedImpact, clip: ClipMinter.Clip, audio: SessionRunner.AudioWindow)
        -> ClipMeta.SoundTrack
    {
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
        audio: SessionRunner.AudioWindow?,
        soundTrack: ClipMeta.SoundTrack? = nil, trigger: String = "heard"
    ) -> ClipMeta {
        let c = session.components.config
        func given<V: Codable & Sendable & Equatable>(_ key: ConfigurationKey<V>, _ value: V, _ note: String? = nil)
            -> ClipMeta.Figure<V>
        {
            ClipMeta.Figure(value, c.parameter(key).provenance.mark.rawValue, note)
        }
        let format = session.components.video.format
        // The audio's times come from the card's own fitted clock, or from the nominal rate.
        let fitted = session.roles.audioClock != nil
        return ClipMeta(
            clipId: clipID, session: session.options.context.session, sessionId: session.options.context.sessionID,
            device: session.options.context.deviceID,
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
                source: session.roles.videoDetailing?.details ?? [:]),
            candidate: .init(
                id: shot.id, onsetSample: shot.onsetSample, impactSample: shot.impactSample, score: shot.score,
                features: shot.features,
                decidedAtSample: shot.decidedAtSample,
                shotRule: trigger == "heard"
                    ? "score ≥ \(session.options.shotThreshold) (the default rule)"
                    : "a bay-mate's shot, relayed by the host"),
            tofCorrection: .init(samples: shot.tofCorrectionSamples, provenance: shot.tofProvenance),
            audio: audio.map {
                .init(
                    file: "audio.wav", sampleRate: $0.rate, firstSample: $0.firstSample, samples: $0.samples.count,
                    missingSamples: $0.missing,
                    windowNs: given(.audioWindowNs, c[.audioWindowNs]), preNs: given(.audioPreNs, c[.audioPreNs]),
                    firstSampleNs: .init(
                        $0.firstSampleNs, fitted ? "measured" : "derived",
                        fitted
                            ? "the card's sample clock, fitted against the capture clock"
                            : "the stream's first block time + samples at the nominal rate"),
                    nsPerSample: .init(
                        $0.nsPerSample, fitted ? "measured" : "derived",
                        fitted
                            ? "the same fit's sample period" : "1e9 / the nominal rate"))
            },
            soundTrack: soundTrack,
            timeline: .init(file: "index.bin", entries: window.timeline.entries.count), files: [:],
            createdAt: ISO8601DateFormatter().string(from: Date()), trigger: trigger)
    }
}
