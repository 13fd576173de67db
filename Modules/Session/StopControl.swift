import Synchronization

/// Where a session's capture stops, and why: the one place a stop is decided. `atNs` is read per frame, per audio block
/// and per IMU sample without a lock; the rest is changed under the session's lock (`SessionRunner.requestStop`, a
/// shot heard while a graceful stop waits, the end of the video).
final class StopControl: @unchecked Sendable {
    // @unchecked: `limitNs` and `requests` are read and written under the session's lock; `atNs` is atomic.

    /// Where capture stops, on the capture clock (`Int64.max` until a stop is asked for).
    let atNs = Atomic<Int64>(.max)
    /// The latest a graceful stop may be moved to by shots heard after it was asked for (nil: no stop asked).
    private(set) var limitNs: Int64?
    /// Each stop asked for, in words, for the report.
    private(set) var requests: [String] = []
    /// The post-roll a shot heard before the stop is owed.
    let postNs: Int64

    init(postNs: Int64) { self.postNs = postNs }

    /// A stop asked for `reason`, with capture's newest frame at `newestFrameNs` (`.min`: none yet) and the shots heard
    /// so far at `shotT0s`. Under the session's lock.
    func request(_ mode: SessionRunner.StopMode, reason: String, newestFrameNs now: Int64, shotT0s: [Int64]) {
        switch mode {
        case .now:
            limitNs = .min
            atNs.store(.min, ordering: .relaxed)
            requests.append("\(reason): capture stopped at once")
        case .afterPostRoll:
            guard limitNs == nil else { return }  // already stopping
            guard now != .min else {
                limitNs = .min
                atNs.store(.min, ordering: .relaxed)
                requests.append("\(reason): before the first frame, so capture stopped at once")
                return
            }
            let heard = now.addingReportingOverflow(SessionRunner.stopHearingMarginNs).partialValue
            let limit = heard.addingReportingOverflow(postNs).partialValue
            limitNs = limit
            let owed = shotT0s.map { $0 + postNs }.max() ?? .min
            atNs.store(max(heard, min(limit, owed)), ordering: .relaxed)
            requests.append(
                String(
                    format: "%@: capture went on until the shots heard had their post-roll (at most %.2f s more)",
                    reason, Double(limit - now) / 1e9))
        }
    }

    /// A shot heard while a graceful stop waits moves the stop to its post-roll's end, within the stop's limit.
    func extend(for shotT0Ns: Int64) {
        guard let limit = limitNs, limit != .min else { return }
        let end = min(limit, shotT0Ns + postNs)
        if end > atNs.load(ordering: .relaxed) { atNs.store(end, ordering: .relaxed) }
    }

    /// Capture ended: nothing is heard past `heardUntilNs`.
    func captureEnded(heardUntilNs: Int64) {
        if heardUntilNs < atNs.load(ordering: .relaxed) { atNs.store(heardUntilNs, ordering: .relaxed) }
    }
}
