import Config
import Foundation
import FragmentRing
import Policy
import Syscall
import TimelineIndex

/// How a session lays itself out, for the session and for whoever opens what it leaves (`transfer drain`, `policy
/// check`): its ring's configuration and headroom, its timeline's sources, the policy it watches, the leftovers of a
/// killed run it clears.
public enum SessionLayout {
    public static let videoSource = SourceID(1)
    public static let audioSource = SourceID(2)
    public static let imuSource = SourceID(3)
    public static let eventSource = SourceID(4)
    public static let policySource = SourceID(5)

    /// The ring's headroom: four fragments at the operating bitrate, at least 16 MiB and at most 256 MiB — enough to
    /// carry capture across a disk another writer filled until recycling frees the oldest fragments' space.
    static func headroomBytes(_ c: Configuration) -> Int64 {
        let fragment = c[.ringFootprintBytes] / max(1, c[.fragmentCapacity])
        return min(256 << 20, max(16 << 20, 4 * fragment))
    }

    /// How a session's ring is kept, for the session and for whoever opens its ring after it (`transfer drain`): a clip
    /// owed to a host keeps its fragments pinned beside the ring's window, so the window never shrinks for it — a host
    /// that is down never costs a later shot its pre-roll.
    public static func ringConfiguration(capacity: Int, fileExtension: String, headroomBytes: Int64 = 0)
        -> FragmentRing.Configuration
    {
        .init(
            capacity: capacity, durability: .fsync, whenOnlyPinnedRemain: .keepPinnedBeside,
            fileExtension: fileExtension,
            headroomBytes: headroomBytes)
    }

    /// Removes every entry of `staging`; returns their names.
    static func clearStaging(_ staging: String) -> [String] {
        let names = ((try? FileSystem.list(staging)) ?? []).sorted()
        for n in names { try? FileManager.default.removeItem(atPath: "\(staging)/\(n)") }
        return names
    }

    /// What a session's Policy watches, from its configuration: the thermal zones under `thermalRoot` against the
    /// configured thresholds and ladder, `out`'s free space against the storage floor, and the memory budget
    /// (`ppc-tool policy check` asks the same before any session).
    public static func policySettings(_ c: Configuration, out: String, thermalRoot: String) -> PolicyMonitor.Settings {
        .init(
            sampleIntervalNs: Int64(1e9 / c[.sampleHz]),
            sensor: ThermalSensor(
                root: thermalRoot, fairCelsius: c[.fairCelsius], seriousCelsius: c[.seriousCelsius],
                criticalCelsius: c[.criticalCelsius]),
            historyWindow: Int(c[.thermalHistoryWindow]), persistentSerious: Int(c[.persistentSeriousReadings]),
            outputDirectory: out, storageFloorBytes: c[.storageFloorBytes], memoryBudgetBytes: c[.memoryBudgetBytes])
    }
}
