import Capture
import Foundation
import Pipeline
import Syscall

/// The video thread's stage (raised priority): source → encoder → ring through a `CaptureSession`, each sealed fragment
/// and each interruption recorded on the session; when capture ends, the session drains, and the audio is heard up to
/// the last frame and as far past it as the last shots' audio windows reach, no further.
final class VideoStage: @unchecked Sendable {
    // @unchecked: it holds nothing of its own; what it shares with the session is behind the session's lock.
    unowned let runner: SessionRunner

    init(runner: SessionRunner) { self.runner = runner }

    func run() {
        let session = CaptureSession(
            source: runner.components.video, encoder: runner.components.encoder, ring: runner.ring,
            timeline: runner.videoTimeline,
            fragmentNs: runner.components.config[.fragmentNs], fragmentCuts: runner.fragmentCuts)
        runner.lock.lock()
        runner.capture = session
        runner.lock.unlock()
        session.onPublish = { [self] f in
            runner.record(
                .fragment(
                    startNs: f.startNs, endNs: f.endNs, frames: Int(f.frameCount),
                    startsWithKeyframe: f.startsWithKeyframe)
            )
        }
        let observers = runner.roles.frameObservers
        if !observers.isEmpty {
            let format = runner.components.video.format
            session.frameObserver = { frame, info in for o in observers { o.observe(frame, format: format, info: info) }
            }
        }
        session.onInterruption = { [self] i in runner.record(.interruption(.video, i)) }
        do {
            let stats = try session.run(.init(durationNs: runner.options.durationNs)) {
                $0 >= self.runner.stop.atNs.load(ordering: .relaxed)
            }
            runner.lock.lock()
            runner.captureStats = stats
            runner.lock.unlock()
        } catch {
            runner.lock.lock()
            // what was captured before the source failed is kept and counted
            runner.captureStats = session.lastStatistics
            runner.lock.unlock()
            runner.fail("video", error)
        }
        runner.lock.lock()
        runner.videoDone = true
        runner.state = .draining
        // Capture is over: the audio is heard up to the last frame, and as far past it as the last shots' audio windows
        // reach, no further (a live microphone would otherwise go on for ever); a microphone that went away is no
        // longer waited for.
        let last = session.newestFrameNs.load(ordering: .relaxed)
        let c = runner.components.config
        let heardUntil =
            last == .min
            ? .min : last &+ SessionRunner.stopHearingMarginNs &+ max(0, c[.audioWindowNs] - c[.audioPreNs])
        runner.stop.captureEnded(heardUntilNs: heardUntil)
        runner.lock.broadcast()
        runner.lock.unlock()
        runner.options.observe?(.sourceEnded(.video))
        runner.options.observe?(.state(.draining))
        runner.roles.audioDeviceWaiting?.stopWaitingForDevice()
    }
}
