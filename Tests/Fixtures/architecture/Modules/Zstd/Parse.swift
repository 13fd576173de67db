// Fixture for check-architecture rule 6: JSON parsed outside JSONInput. Not compiled.
import Foundation

func settings(_ data: Data) throws -> Any { try JSONSerialization.jsonObject(with: data) }
func typed(_ data: Data) throws -> [Int] { try JSONDecoder().decode([Int].self, from: data) }
func written(_ o: Any) throws -> Data {
    try JSONSerialization.data(withJSONObject: o)  // writing JSON is not parsing it
}
