import Foundation

/// Where a figure came from. Seed 000's governing habit: nothing claims to be measured when it is not.
///
/// `measured` can only be built from a ``MeasurementRecord``, and a record can only be built with a date and an
/// instrument, so no code path can mark a value measured without saying when and with what it was measured.
public enum Provenance: Sendable, Equatable {
    /// Measured on this project's hardware, with the record of the measurement.
    case measured(MeasurementRecord)
    /// Vendor-documented: a published figure or an API contract, with where it is documented.
    case vendor(source: String)
    /// Derived by arithmetic from other parameters; the arithmetic is shown.
    case derived(Derivation)
    /// A defensible starting value nobody has verified.
    case assumed

    /// The mark as seed 000 spells it in JSON: `measured`, `vendor`, `derived`, `assumed`.
    public var mark: Mark {
        switch self {
        case .measured: .measured
        case .vendor: .vendor
        case .derived: .derived
        case .assumed: .assumed
        }
    }

    /// The four marks, without their payloads.
    public enum Mark: String, Sendable, CaseIterable, Codable {
        case measured, vendor, derived, assumed

        /// Seed 000's one-letter column (M, V, D, A).
        public var letter: String {
            switch self {
            case .measured: "M"
            case .vendor: "V"
            case .derived: "D"
            case .assumed: "A"
            }
        }
    }
}

/// The record that makes a figure `measured`: the value seen, the day it was seen and the instrument that saw it.
public struct MeasurementRecord: Sendable, Equatable, Codable {
    public let value: Double
    /// ISO 8601 calendar date, `YYYY-MM-DD`.
    public let date: String
    /// What measured it — a rig, a tool and its version, a machine.
    public let instrument: String

    /// Builds a record; throws when the date is not `YYYY-MM-DD`, the instrument is empty or the value is not finite.
    public init(value: Double, date: String, instrument: String) throws(ConfigError) {
        var problems: [ConfigError.Problem] = []
        if !value.isFinite {
            problems.append(.init(.invalidMeasurement, key: nil, "measurement value \(value) is not a finite number"))
        }
        if !MeasurementRecord.isCalendarDate(date) {
            problems.append(.init(.invalidMeasurement, key: nil, "measurement date '\(date)' is not YYYY-MM-DD"))
        }
        if instrument.trimmingCharacters(in: .whitespaces).isEmpty {
            problems.append(
                .init(.invalidMeasurement, key: nil, "measurement instrument is empty: say what measured it"))
        }
        if !problems.isEmpty { throw ConfigError(problems) }
        self.value = value
        self.date = date
        self.instrument = instrument
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            value: c.decode(Double.self, forKey: .value),
            date: c.decode(String.self, forKey: .date),
            instrument: c.decode(String.self, forKey: .instrument))
    }

    static func isCalendarDate(_ s: String) -> Bool {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2])
        else { return false }
        return y >= 1970 && (1...12).contains(m) && (1...31).contains(d)
    }
}

/// How a derived figure is computed: a formula over named inputs, and the arithmetic with the values filled in.
public struct Derivation: Sendable, Equatable {
    /// The formula over parameter keys, e.g. `capture.fragmentSeconds × capture.fragmentCapacity`.
    public let formula: String
    /// The keys the formula reads.
    public let inputs: [String]
    /// The formula with this configuration's values, e.g. `0.5 s × 20 = 10 s`.
    public let arithmetic: String
}
