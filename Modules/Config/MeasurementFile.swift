import Checksum
import Foundation
import JSONInput
import Syscall

/// A measurement record on disk, as `ppc-tool measure` writes it: the parameter, the value measured, the date, the
/// instrument, the evidence behind it (a bitrate sweep, a run's series), and an XXH3 over all of that so a record edited
/// by hand is refused, not believed. Loading one gives an override whose provenance is `measured` — the only way,
/// besides `--measured KEY=DATE INSTRUMENT`, that a figure becomes measured.
///
/// The checksum guards against accident and careless edits, not against someone who recomputes it: a record is
/// evidence a person can read and re-run, not a signature.
public enum MeasurementFile {
    public static let format = "ppc-measurement-1"
    /// The largest record read (a record is a few KiB; a 200 MB file was read whole, 616 MiB resident, before it was
    /// refused).
    public static let maxRecordBytes = 1 << 20

    /// The record's canonical bytes (sorted keys, no checksum), which the checksum covers.
    static func canonical(_ object: [String: Any]) throws -> Data {
        var o = object
        o["xxh3"] = nil
        return try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// Writes a record for `key` (atomically): value, today's date, the instrument, and `evidence` (plain JSON values).
    public static func write(
        to path: String, key: String, value: Double, date: String, instrument: String, evidence: [String: Any]
    ) throws {
        var o: [String: Any] = [
            "format": format, "parameter": key, "value": value, "date": date, "instrument": instrument,
            "evidence": evidence,
        ]
        // Hashed as it will be read back (serialised and parsed once), so numbers compare as the reader sees them.
        let settled = try JSONInput.object(try canonical(o))
        o["xxh3"] = XXH3.hex(XXH3.hash([UInt8](try canonical(settled))))
        let data = try JSONSerialization.data(
            withJSONObject: o, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        // Written beside itself and renamed (Foundation's .atomic leaves an empty /tmp/TemporaryDirectory.* per write).
        try FileSystem.writeAtomically([UInt8](data), to: path)
    }

    /// The override a record file makes: its parameter at its value, marked measured by its record. Refused, naming the
    /// file and why, when it is not a record, names an unknown parameter, holds a value out of range, or was altered.
    public static func load(_ path: String, definitions: [ParameterDefinition] = Catalog.definitions)
        throws(ConfigError) -> Override
    {
        func fail(_ why: String) -> ConfigError {
            ConfigError([.init(.invalidMeasurement, key: nil, "\(path): \(why)")])
        }
        let data: Data
        do { data = Data(try FileSystem.readSmallFile(path, limit: maxRecordBytes, regularFileOnly: true)) } catch {
            throw fail(
                error.errno == EFBIG
                    ? "more than \(maxRecordBytes >> 10) KiB: not a measurement record" : "cannot read it (\(error))")
        }
        let o: [String: Any]
        do { o = try JSONInput.object(data) } catch { throw fail("\(error)") }
        guard o["format"] as? String == format else {
            throw fail("not a measurement record (format is not '\(format)')")
        }
        guard let key = o["parameter"] as? String, let value = (o["value"] as? NSNumber)?.doubleValue,
            let date = o["date"] as? String,
            let instrument = o["instrument"] as? String, let sum = o["xxh3"] as? String
        else { throw fail("a record needs parameter, value, date, instrument and xxh3") }
        guard let bytes = try? canonical(o), XXH3.hex(XXH3.hash([UInt8](bytes))) == sum else {
            throw fail(
                "the record was altered after it was written (its xxh3 does not match): measure again rather than edit it"
            )
        }
        guard let def = definitions.first(where: { $0.key == key }) else { throw fail("unknown parameter '\(key)'") }
        let text = value == value.rounded() && abs(value) < 9e15 ? String(Int64(value)) : String(value)
        var o2 = try Configuration.override(
            assignment: "\(key)=\(text)", measured: "\(date) \(instrument)", origin: path, definitions: definitions)
        o2 = Override(key: o2.key, value: o2.value, measurement: o2.measurement, note: "record \(path)", origin: path)
        _ = def
        return o2
    }
}
