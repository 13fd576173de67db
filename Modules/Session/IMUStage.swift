import Capture
import Foundation
import Pipeline
import Syscall

/// The IMU thread's stage: samples onto the timeline no further ahead of the video than `imuLeadNs`, and a mint's wait
/// for them. Its counts are atomics on the session, read by the report.
struct IMUStage {
    unowned let runner: SessionRunner

    func run() {
        guard let source = runner.components.imu else { return }
        defer { runner.imuEnded.store(true, ordering: .relaxed) }
        do {
            var n: UInt64 = 0
            var video: CaptureSession?
            while let s = try source.next() {
                if n == 0 { runner.imuFirstSampleNs.store(s.timeNs, ordering: .relaxed) }
                runner.imuPendingNs.store(s.timeNs, ordering: .relaxed)
                guard s.timeNs < runner.stop.atNs.load(ordering: .relaxed) else { break }
                if let v = video, s.timeNs <= v.newestFrameNs.load(ordering: .relaxed) &+ Self.imuLeadNs {
                } else {
                    video = waitForVideo(reaching: s.timeNs)
                    // capture ended while it waited
                    guard s.timeNs < runner.stop.atNs.load(ordering: .relaxed) else { break }
                }
                // The rotation rate about x, in milliradians per second, rides in the entry's value.
                runner.imuTimeline.append(
                    timeNs: s.timeNs, kind: .imuSample, reference: n, value: Int64((s.rotationRate.x * 1000).rounded()))
                n += 1
                runner.imuSamples.add(1, ordering: .relaxed)
                // Before the video's first frame: no clip can hold it (a recording that starts earlier, or another clock).
                if let v = video, s.timeNs < v.firstFrameNs.load(ordering: .relaxed) {
                    runner.imuSamplesBeforeVideo.add(1, ordering: .relaxed)
                }
            }
        } catch {
            runner.fail("imu", error)
        }
    }

    /// How far past the newest frame an IMU sample is taken: a recorded IMU (`file.imu`) parses far faster than real
    /// time, and one read ahead of the video by more than its ring holds would lose a shot's samples before the clip is
    /// minted. A live sensor is never that far ahead. Assumed.
    static let imuLeadNs: Int64 = 1_000_000_000

    /// Waits until the video has reached `t` less `imuLeadNs` (or capture has ended, or a stop came now); returns the
    /// capture session once there is one. Polled every 2 ms: only a recording that runs ahead ever waits here.
    func waitForVideo(reaching t: Int64) -> CaptureSession? {
        while true {
            runner.lock.lock()
            let session = runner.capture
            let done = runner.videoDone
            runner.lock.unlock()
            let newest = session?.newestFrameNs.load(ordering: .relaxed) ?? .min
            if done || runner.stop.atNs.load(ordering: .relaxed) == .min
                || (newest != .min && t <= newest &+ Self.imuLeadNs)
            {
                return session
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    /// How long a mint waits for the IMU to pass its window's end, wall time: a recorded IMU catches up within
    /// microseconds, a live one within its sample period; a live one far behind on another clock never does, and the
    /// clip is minted with what there is. (One ahead of the video waits for it, its next sample already past the
    /// window: no wait.) Assumed.
    static let imuWaitNs: Int64 = 3_000_000_000

    /// Before a window is frozen, its IMU samples are all on the timeline: the IMU thread may trail a video read as
    /// fast as it decodes. Polled every 2 ms, only while the IMU trails the window's end.
    func waitForIMU(reaching endNs: Int64) {
        guard runner.components.imu != nil else { return }
        let deadline = monotonicNowNs() + Self.imuWaitNs
        while !runner.imuEnded.load(ordering: .relaxed), runner.imuPendingNs.load(ordering: .relaxed) <= endNs,
            runner.stop.atNs.load(ordering: .relaxed) != .min, monotonicNowNs() < deadline
        {
            Thread.sleep(forTimeInterval: 0.002)
        }
    }
}
