// Fixture: inside Modules/JSONInput parsing is the point. Not compiled.
import Foundation

func allowed(_ data: Data) throws -> Any { try JSONSerialization.jsonObject(with: data) }
