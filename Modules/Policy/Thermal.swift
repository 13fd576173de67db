import Foundation

/// How hot the machine is, on the four-step scale seed 001's ladder uses (ProcessInfo.thermalState on iOS).
public enum ThermalLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case nominal, fair, serious, critical

    public static func < (a: ThermalLevel, b: ThermalLevel) -> Bool { a.rawValue < b.rawValue }
    public var description: String { ["nominal", "fair", "serious", "critical"][rawValue] }
}

/// One reading of the machine's thermal zones.
public struct ThermalReading: Sendable, Equatable {
    /// The hottest zone's level and temperature.
    public var level: ThermalLevel
    public var hottestCelsius: Double
    /// Which zone, and what its level was judged against ("trip point passive 85.0 °C", "policy.seriousCelsius 85 °C").
    public var zone: String
    public var basis: String
}

/// Reads `/sys/class/thermal` (or any directory laid out like it — tests write one): each `thermal_zoneN` has `temp`
/// (millidegrees) and, often, `trip_point_K_type` / `trip_point_K_temp`. A zone's level comes from its own trip points
/// where it publishes them — at or past `critical` or `hot`: critical; past `passive` (the kernel starts throttling):
/// serious; within 10 °C of `passive`: fair — and otherwise from policy.fairCelsius / seriousCelsius / criticalCelsius
/// (assumed). The machine's level is its hottest zone's.
public struct ThermalSensor: Sendable {
    public let root: String
    public let fairCelsius: Double
    public let seriousCelsius: Double
    public let criticalCelsius: Double

    public init(
        root: String = "/sys/class/thermal", fairCelsius: Double, seriousCelsius: Double, criticalCelsius: Double
    ) {
        self.root = root
        self.fairCelsius = fairCelsius
        self.seriousCelsius = seriousCelsius
        self.criticalCelsius = criticalCelsius
    }

    /// The current reading, or nil when there are no readable zones (a VM, a container): then nothing is claimed.
    public func read() -> ThermalReading? {
        guard
            let zones = try? FileManager.default.contentsOfDirectory(atPath: root).filter({
                $0.hasPrefix("thermal_zone")
            }).sorted()
        else { return nil }
        var worst: ThermalReading?
        for z in zones {
            let dir = "\(root)/\(z)"
            guard let milli = Self.number(at: "\(dir)/temp") else { continue }
            let c = milli / 1000
            var trips: [String: Double] = [:]
            for k in 0..<16 {
                guard let type = try? String(contentsOfFile: "\(dir)/trip_point_\(k)_type", encoding: .utf8),
                    let t = Self.number(at: "\(dir)/trip_point_\(k)_temp")
                else { continue }
                let name = type.trimmingCharacters(in: .whitespacesAndNewlines)
                trips[name] = min(trips[name] ?? .infinity, t / 1000)
            }
            let (level, basis) = judge(c, trips)
            let r = ThermalReading(level: level, hottestCelsius: c, zone: z, basis: basis)
            if worst == nil || level > worst!.level || (level == worst!.level && c > worst!.hottestCelsius) {
                worst = r
            }
        }
        return worst
    }

    func judge(_ c: Double, _ trips: [String: Double]) -> (ThermalLevel, String) {
        let crit = min(trips["critical"] ?? .infinity, trips["hot"] ?? .infinity)
        if crit.isFinite {
            if c >= crit { return (.critical, String(format: "trip point hot/critical %.1f °C", crit)) }
        } else if c >= criticalCelsius {
            return (.critical, String(format: "policy.criticalCelsius %.0f °C", criticalCelsius))
        }
        if let passive = trips["passive"] {
            if c >= passive { return (.serious, String(format: "trip point passive %.1f °C", passive)) }
            if c >= passive - 10 {
                return (.fair, String(format: "within 10 °C of trip point passive %.1f °C", passive))
            }
            return (.nominal, String(format: "below trip point passive %.1f °C", passive))
        }
        if c >= seriousCelsius { return (.serious, String(format: "policy.seriousCelsius %.0f °C", seriousCelsius)) }
        if c >= fairCelsius { return (.fair, String(format: "policy.fairCelsius %.0f °C", fairCelsius)) }
        return (.nominal, String(format: "below policy.fairCelsius %.0f °C", fairCelsius))
    }

    static func number(at path: String) -> Double? {
        (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
            Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}

/// What yields, in seed 000's order: transfer first, then minting, capture last — capture is never slowed or stopped
/// by policy (its format is fixed for the session; a refused arm below the storage floor is the only gate, and it is
/// at the start).
public enum Stance: Int, Sendable, Comparable, CustomStringConvertible {
    /// Everything runs.
    case full
    /// Clip transfers pause between chunks (they resume where they stopped).
    case transferPaused
    /// Transfers pause and new clips wait to be minted (their fragments stay pinned; nothing is lost).
    case transferAndMintPaused

    public static func < (a: Stance, b: Stance) -> Bool { a.rawValue < b.rawValue }
    public var description: String {
        switch self {
        case .full: "everything runs"
        case .transferPaused: "transfers pause"
        case .transferAndMintPaused: "transfers pause and minting waits"
        }
    }
}

/// Seed 001's thermal manager on ppc's terms: a short history of levels, so one hot reading is treated as transient
/// and several as persistent. nominal/fair → full; serious → transfers pause, and if serious-or-worse persists
/// (`persistent` of the last `window` readings) minting waits too; critical → both at once.
public struct ThermalLadder: Sendable {
    public let window: Int
    public let persistent: Int
    public private(set) var history: [ThermalLevel] = []

    public init(window: Int, persistent: Int) {
        self.window = max(1, window)
        self.persistent = min(max(1, persistent), max(1, window))
    }

    /// Takes a reading; returns the stance it calls for, with the reason in words.
    public mutating func add(_ level: ThermalLevel) -> (Stance, String) {
        history.append(level)
        if history.count > window { history.removeFirst(history.count - window) }
        let high = history.filter { $0 >= .serious }.count
        switch level {
        case .nominal, .fair:
            return (.full, "thermal \(level)")
        case .serious:
            return high >= persistent
                ? (
                    .transferAndMintPaused,
                    "thermal serious in \(high) of the last \(history.count) readings (persistent)"
                )
                : (.transferPaused, "thermal serious (transient so far: \(high) of the last \(history.count) readings)")
        case .critical:
            return (.transferAndMintPaused, "thermal critical")
        }
    }
}
