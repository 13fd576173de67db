import Foundation
import Synchronization
import Syscall

/// Watches thermal zones, free space and memory while a session runs, and decides what yields (seed 000 §9.2: transfer
/// and minting before capture; capture is never slowed by policy). Samples on its own thread at policy.sampleHz; the
/// stance is one atomic load for the paths that ask (a transfer between chunks, the mint loop), so asking costs
/// nothing. Every change is kept as an event with the time and a sentence, for the report and the timeline.
public final class PolicyMonitor: @unchecked Sendable {
    // @unchecked: `ladder`, `events`, the warning counts and the last readings are under `lock`; `stanceValue` is atomic.

    public struct Settings: Sendable {
        public var sampleIntervalNs: Int64
        public var sensor: ThermalSensor
        public var historyWindow: Int
        public var persistentSerious: Int
        /// Where the session writes (its filesystem's free space is watched).
        public var outputDirectory: String
        public var storageFloorBytes: Int64
        public var memoryBudgetBytes: Int64
        /// Free bytes at a path (tests inject); default statvfs.
        public var freeBytes: @Sendable (String) -> Int64? = PolicyMonitor.freeBytes(at:)
        /// This process's resident bytes (tests inject); default VmRSS.
        public var residentBytes: @Sendable () -> Int64? = PolicyMonitor.residentBytes

        public init(
            sampleIntervalNs: Int64, sensor: ThermalSensor, historyWindow: Int, persistentSerious: Int,
            outputDirectory: String,
            storageFloorBytes: Int64, memoryBudgetBytes: Int64
        ) {
            self.sampleIntervalNs = sampleIntervalNs
            self.sensor = sensor
            self.historyWindow = historyWindow
            self.persistentSerious = persistentSerious
            self.outputDirectory = outputDirectory
            self.storageFloorBytes = storageFloorBytes
            self.memoryBudgetBytes = memoryBudgetBytes
        }
    }

    /// Something that changed: a thermal level, the stance, free space or memory crossing its line.
    public struct Event: Sendable, Equatable {
        public enum Kind: String, Sendable { case thermal, stance, storage, memory }
        /// CLOCK_MONOTONIC, ns (the capture clock).
        public var timeNs: Int64
        public var kind: Kind
        public var sentence: String
    }

    public let settings: Settings
    let lock = NSLock()
    var ladder: ThermalLadder
    var lastLevel: ThermalLevel?
    var lowOnStorage = false
    var overMemory = false
    public private(set) var events: [Event] = []
    var thermalWarningCount = 0
    var storageWarningCount = 0
    var memoryWarningCount = 0
    var lastReading: ThermalReading?
    var lastFreeBytes: Int64?
    var peakCelsius: Double?
    let stanceValue = Atomic<Int>(Stance.full.rawValue)
    let running = Atomic<Bool>(false)
    /// Called (on the policy thread) with each thermal reading whose level differs from the last.
    public var onThermal: (@Sendable (ThermalReading) -> Void)?

    public init(_ settings: Settings) {
        self.settings = settings
        ladder = ThermalLadder(window: settings.historyWindow, persistent: settings.persistentSerious)
    }

    /// What yields now. One atomic load.
    public var stance: Stance { Stance(rawValue: stanceValue.load(ordering: .relaxed)) ?? .full }

    public var warnings: (thermal: Int, storage: Int, memory: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (thermalWarningCount, storageWarningCount, memoryWarningCount)
    }

    public var history: [Event] {
        lock.lock()
        defer { lock.unlock() }
        return events
    }

    /// The last thermal reading and the hottest seen, if any zone was readable.
    public var thermal: (last: ThermalReading?, peakCelsius: Double?) {
        lock.lock()
        defer { lock.unlock() }
        return (lastReading, peakCelsius)
    }

    /// Free bytes where the session stores, as last sampled (nil before the first sample or when unreadable).
    public var freeBytes: Int64? {
        lock.lock()
        defer { lock.unlock() }
        return lastFreeBytes
    }

    /// Seed 000 REQ-OFF-2: refuse to arm below the storage floor rather than evict anything unconfirmed. Returns why not,
    /// or nil when the session may arm.
    public func armRefusal() -> String? {
        guard let free = settings.freeBytes(settings.outputDirectory) else { return nil }
        guard free < settings.storageFloorBytes else { return nil }
        return
            "refusing to arm: \(Self.format(free)) free on the filesystem of \(settings.outputDirectory), below the storage floor of \(Self.format(settings.storageFloorBytes)) (device.storageFloorBytes: one session plus the ring, derived); free space, or point --out elsewhere"
    }

    /// One sample: reads everything, updates the stance, records what changed. The thread calls it; tests call it.
    public func sample() {
        let now = monotonicNowNs()
        let reading = settings.sensor.read()
        let free = settings.freeBytes(settings.outputDirectory)
        let rss = settings.residentBytes()
        var notify: ThermalReading?
        lock.lock()
        if let r = reading {
            lastReading = r
            peakCelsius = max(peakCelsius ?? r.hottestCelsius, r.hottestCelsius)
            if r.level != lastLevel {
                events.append(
                    Event(
                        timeNs: now, kind: .thermal,
                        sentence: String(
                            format: "thermal %@ (%@ at %.1f °C, against %@)", r.level.description, r.zone,
                            r.hottestCelsius, r.basis)))
                if r.level >= .serious && (lastLevel ?? .nominal) < .serious { thermalWarningCount += 1 }
                lastLevel = r.level
                notify = r
            }
            let (next, why) = ladder.add(r.level)
            if next != stance {
                stanceValue.store(next.rawValue, ordering: .relaxed)
                events.append(Event(timeNs: now, kind: .stance, sentence: "\(next) — \(why)"))
            }
        }
        lastFreeBytes = free
        if let free {
            crossing(
                free < settings.storageFloorBytes, &lowOnStorage, &storageWarningCount, .storage, now,
                "free space \(Self.format(free)) fell below the storage floor \(Self.format(settings.storageFloorBytes)): capture goes on (the ring is preallocated), new sessions will refuse to arm",
                "free space \(Self.format(free)) back above the storage floor")
        }
        if let rss {
            crossing(
                rss > settings.memoryBudgetBytes, &overMemory, &memoryWarningCount, .memory, now,
                "resident memory \(Self.format(rss)) above the budget \(Self.format(settings.memoryBudgetBytes)) (policy.memoryBudgetBytes, assumed)",
                "resident memory \(Self.format(rss)) back within the budget")
        }
        lock.unlock()
        if let notify { onThermal?(notify) }
    }

    /// A line crossed (or crossed back): one event each way, one warning each time it is crossed. Under `lock`.
    func crossing(
        _ now: Bool, _ was: inout Bool, _ warnings: inout Int, _ kind: Event.Kind, _ timeNs: Int64, _ over: String,
        _ back: String
    ) {
        guard now != was else { return }
        was = now
        if now { warnings += 1 }
        events.append(Event(timeNs: timeNs, kind: kind, sentence: now ? over : back))
    }

    /// Takes the first sample now, on the calling thread (so the stance is known before anything asks), then samples
    /// on a thread of its own (lowered priority: policy never competes with capture).
    public func start() {
        guard !running.exchange(true, ordering: .relaxed) else { return }
        sample()
        Thread { [self] in
            ThreadPriority.lowerCurrent(nice: 5)
            while running.load(ordering: .relaxed) {
                sleepNs(settings.sampleIntervalNs)  // the sampling period, not a synchronisation
                if running.load(ordering: .relaxed) { sample() }
            }
        }.start()
    }

    /// Stops sampling. Returns at once: the thread ends after its current sleep, taking no further sample (everything it
    /// touches is kept alive by the monitor itself).
    public func stop() { running.store(false, ordering: .relaxed) }

    public static func freeBytes(at path: String) -> Int64? {
        var s = statvfs()
        var p = path
        // The output directory may not exist yet: its nearest existing parent is on the same filesystem.
        while !FileManager.default.fileExists(atPath: p), p != "/" {
            p = (p as NSString).deletingLastPathComponent.isEmpty ? "/" : (p as NSString).deletingLastPathComponent
        }
        guard statvfs(p, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }

    public static func residentBytes() -> Int64? { ProcessMemory.bytes("VmRSS") }

    static func format(_ b: Int64) -> String {
        b >= 1 << 30
            ? String(format: "%.2f GiB", Double(b) / Double(1 << 30))
            : String(format: "%.1f MiB", Double(b) / Double(1 << 20))
    }
}
