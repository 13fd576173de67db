import Capture
import Foundation
import Pipeline
import Syscall

/// The status thread's stage: about once a second, the device's state to the sinks that pass it on (a host's live
/// view), until capture ends.
struct StatusReporter {
    unowned let runner: SessionRunner

    /// About once a second until capture ends: the device's state to sinks that pass it on (a host's live view).
    func run(_ observers: [DeviceStatusObserving]) {
        var lastFrames = 0
        var lastNs = monotonicNowNs()
        while true {
            let deadline = Date(timeIntervalSinceNow: 1)
            runner.lock.lock()
            // Paced by the condition until the second is up (capture ending wakes it at once; other broadcasts — a
            // fragment published — only make it look again), not a sleep standing in for an event.
            while !runner.videoDone, Date() < deadline { _ = runner.lock.wait(until: deadline) }
            let done = runner.videoDone
            let state = runner.state
            let session = runner.capture
            runner.lock.unlock()
            if done { return }
            let frames = session?.framesEncodedSoFar.load(ordering: .relaxed) ?? 0
            let dropped = session?.framesDroppedSoFar.load(ordering: .relaxed) ?? 0
            let now = monotonicNowNs()
            let fps = now > lastNs ? Double(frames - lastFrames) * 1e9 / Double(now - lastNs) : 0
            lastFrames = frames
            lastNs = now
            let heat = runner.policy.thermal.last
            let report = DeviceStatusReport(
                armed: state == .armed, state: state.description, framesPerSecond: fps, framesDropped: dropped,
                thermal: heat.map { "\($0.level)" } ?? "unknown (no thermal zone readable)",
                thermalCelsius: heat?.hottestCelsius,
                // as Policy last sampled it: one statvfs per policy sample, not two
                storageFreeBytes: runner.policy.freeBytes)
            for o in observers { o.deviceStatus(report) }
        }
    }
}
