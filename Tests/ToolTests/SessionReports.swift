import Foundation
import Session

/// A run's report.json, read as the typed document the session wrote (`SessionReport.Document`): tests assert its
/// figures, not the summary's English.
func sessionReport(_ out: String) throws -> SessionReport.Document {
    try JSONDecoder().decode(
        SessionReport.Document.self, from: Data(contentsOf: URL(fileURLWithPath: "\(out)/report.json")))
}
