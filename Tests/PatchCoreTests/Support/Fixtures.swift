import Foundation
import PatchCore
import Testing

/// Loads the vectors written by `Tests/interop/gen_vectors.py`. Foundation's decoder reads
/// them, not our parser, so a parser bug cannot hide a wrong vector.
enum Fixture {
    struct Missing: Error, CustomStringConvertible {
        let name: String
        var description: String { "fixture \(name).json is not in the test bundle" }
    }

    static func load<Vectors: Decodable>(_ name: String, as _: Vectors.Type = Vectors.self) throws -> Vectors {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures") else {
            throw Missing(name: name)
        }
        return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }
}

/// Hex from a fixture or a literal; a typo fails the test instead of crashing it.
func bytes(hex: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
    try #require(Hex.decode(hex), "not hex: \(hex)", sourceLocation: sourceLocation)
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}
