import Dispatch
import Foundation
import Media
import Studio
import Syscall
import Transfer

/// A device's live state as the studio shows it (docs/studio.md, /api/devices).
enum StudioLive {
    static func device(_ d: HostServer.LiveDevice) -> StudioAPI.Device {
        let now = monotonicNowNs()
        return StudioAPI.Device(
            id: d.id, link: d.link, captureProfile: d.captureProfile,
            relation: d.relation.map {
                .init(offsetNs: $0.offsetNs, skewPpm: $0.skewPpm, uncertaintyNs: $0.uncertaintyNs, samples: $0.samples)
            },
            status: d.status.map {
                .init(
                    armed: $0.armed, framesPerSecond: $0.framesPerSecond, framesDropped: $0.framesDropped,
                    thermal: $0.thermal, thermalCelsius: $0.thermalCelsius, storageFreeBytes: $0.storageFreeBytes,
                    ageNs: now - $0.receivedNs)
            }, bay: d.bay, hears: d.hears, lastShotDeviceNs: d.lastShotDeviceNs, lastShotHostNs: d.lastShotHostNs,
            lastShotAgoNs: d.lastShotAtNs.map { now - $0 }, lastSeenAgoNs: now - d.lastSeenNs)
    }
}

/// Viewing copies of Motion JPEG clips, made one at a time on a background queue at utility priority: never on a
/// receiving thread, never competing with one for long.
final class ViewCopies: Sendable {
    let queue = DispatchQueue(label: "ppc-host.view-copies", qos: .utility)
    let log: @Sendable (String) -> Void

    init(log: @escaping @Sendable (String) -> Void) { self.log = log }

    func enqueue(_ clipDirectory: String) {
        queue.async { [log] in
            let clip = clipDirectory + "/clip.mp4"
            let view = clipDirectory + "/view.mp4"
            // A FIFO where the clip should be would hold this queue for ever: only a regular file is opened.
            guard !FileManager.default.fileExists(atPath: view), FileSystem.isRegularFile(clip),
                ViewTranscoder.needsViewingCopy(clip)
            else { return }
            do {
                let r = try ViewTranscoder.transcode(clip, to: view)
                log(
                    "view copy of \(clipDirectory): \(r.frames) frames of \(r.sourceCodec) \(r.width)x\(r.height)@\(r.framesPerSecond) → H.264 view.mp4 (original kept)"
                )
            } catch {
                log("view copy of \(clipDirectory) failed: \(error) (the original clip is intact)")
            }
        }
    }

    /// Queues every stored clip that needs a copy and has none (a stop came before it was made).
    func catchUp(library: String) {
        let fm = FileManager.default
        for device in (try? fm.contentsOfDirectory(atPath: library)) ?? [] where !device.hasPrefix(".") {
            for clip in (try? fm.contentsOfDirectory(atPath: "\(library)/\(device)")) ?? [] where !clip.hasPrefix(".") {
                let dir = "\(library)/\(device)/\(clip)"
                if fm.fileExists(atPath: dir + "/clip.mp4"), !fm.fileExists(atPath: dir + "/view.mp4") { enqueue(dir) }
            }
        }
    }
}
