import Capture
import Foundation
import PayloadSource
import Pipeline
import Syscall

/// First looks: a shot's pre-roll and impact, minted as soon as the ring sealed them and sent ahead of the clip, so a
/// screen at the bay plays the swing within about a second of impact instead of after the post-roll (3 s by default),
/// the mint and the delivery.
///
/// ```
/// look thread:      shot heard ─▶ ring holds t0 + lookAfter ─▶ SwingWindow [t0 − clipPre, that fragment's end] (pinned
///                   only while remuxed) ─▶ OUT/.looks/<clipId>.mp4 ─▶ queued
/// delivery thread:  looks first, between clips ─▶ sinks that show them (a host) ─▶ removed
/// ```
/// A look is never queued for later, resent or owed: one not sent at once (no link, a host that refused it) is dropped
/// and counted. Replay yields to capture: while policy pauses transfers, no look is minted. The clip is minted whole and
/// delivered exactly as it would be without looks.
struct FirstLookStage {
    unowned let runner: SessionRunner

    /// How far past t0 a look reaches before it is minted: the impact and the ball's first flight (assumed). The look
    /// then holds every fragment up to the one sealed after that.
    static let lookAfterNs: Int64 = 150_000_000

    /// Where looks are made: `OUT/.looks/`.
    static func looksDirectory(out: String) -> String { "\(out)/.looks" }

    /// Mints a first look at each shot as soon as the ring holds it, until capture ends.
    func run() {
        let dir = Self.looksDirectory(out: runner.options.context.outputDirectory)
        try? FileManager.default.removeItem(atPath: dir)
        guard (try? FileSystem.makeDirectory(dir)) != nil else { return }
        let live = RingPayloadSource(ring: runner.ring, index: runner.index)
        let pre = runner.components.config[.clipPreNs]
        var looked = Set<UInt64>()
        while true {
            runner.lock.lock()
            var due: DetectedImpact?
            while due == nil && !runner.videoDone {
                due = runner.book.pending.first {
                    !looked.contains($0.id) && runner.newestFragmentEndNs >= $0.t0Ns + Self.lookAfterNs
                }
                if due == nil { runner.lock.wait() }
            }
            let captureStartNs = runner.firstFragmentStartNs ?? .min
            runner.lock.unlock()
            guard let shot = due else { return }
            looked.insert(shot.id)
            guard runner.policy.stance < .transferPaused else {
                count(look: "policy pauses transfers and replay (heat): no first look of shot \(shot.id)")
                continue
            }
            let clipID = runner.options.context.clipID(shot: shot.id)
            let path = "\(dir)/\(clipID).mp4"
            do {
                let window = try live.freeze(
                    startNs: max(shot.t0Ns - pre, min(captureStartNs, shot.t0Ns)), endNs: shot.t0Ns + Self.lookAfterNs)
                defer { try? live.release(window) }
                let clip = try ClipMinter.mint(
                    window, to: path, frameIntervalNs: runner.components.video.format.frameIntervalNs,
                    fragmentExtension: runner.components.encoder.fragmentExtension)
                runner.lock.lock()
                runner.looks.append(FirstLook(clipID: clipID, path: path, t0Ns: shot.t0Ns, zeroNs: clip.firstFrameNs))
                runner.lock.broadcast()
                runner.lock.unlock()
            } catch {
                try? FileManager.default.removeItem(atPath: path)
                count(look: "first look of shot \(shot.id) not made: \(error)")
            }
        }
    }

    /// Counts a look not sent, and says why once in the report (the first few reasons).
    func count(look reason: String) {
        runner.lock.lock()
        runner.looksShed += 1
        if runner.looksShedReasons.count < 5 { runner.looksShedReasons.append(reason) }
        runner.lock.unlock()
    }

    /// Sends one look to every sink that shows looks (on the delivery thread); removes it after.
    func deliverLook(_ look: FirstLook) {
        defer { try? FileManager.default.removeItem(atPath: look.path) }
        for s in runner.roles.lookSenders {
            if let why = s.sendLook(look) {
                count(look: "\(look.clipID): \(why)")
            } else {
                runner.lock.lock()
                runner.looksSent += 1
                runner.lock.unlock()
            }
        }
    }
}
