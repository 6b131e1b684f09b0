import Foundation
import PushWorkerCore
@testable import PushWorker
import Testing

/// The `collapse` and `dedupe` configuration keys: defaults, parsing, refusals and check-config's output.
@Suite struct CollapseDedupeConfigurationTests {
    static func load(_ text: String) throws -> ServiceConfiguration {
        try ServiceConfiguration.load(json5: Data(text.utf8), environment: [:])
    }

    static func errorKey(_ text: String) -> String? {
        do {
            _ = try load(text)
            return nil
        } catch let error as ConfigurationError {
            return error.key
        } catch {
            return nil
        }
    }

    @Test func collapseIsOnAndDedupeOffByDefault() throws {
        let configuration = try Self.load("{}")
        #expect(configuration.collapse)
        #expect(configuration.dedupe == nil)
        let text = configuration.effectiveDescription()
        #expect(text.contains(#""collapse" : true"#) && text.contains(#""dedupe" : null"#), "\(text)")
    }

    @Test func theKeysAreRead() throws {
        #expect(try Self.load("{ collapse: false }").collapse == false)
        #expect(try Self.load("{ dedupe: {} }").dedupe == DedupeConfiguration())
        let set = try Self.load("{ dedupe: { windowMs: 60000, maxEntries: 500 } }")
        #expect(set.dedupe == DedupeConfiguration(window: .milliseconds(60_000), maxEntries: 500))
        let text = set.effectiveDescription()
        #expect(text.contains(#""windowMs" : 60000"#) && text.contains(#""maxEntries" : 500"#), "\(text)")
        #expect(try Self.load("{ dedupe: { enabled: false, windowMs: 60000 } }").dedupe == nil)
        #expect(try Self.load("{ dedupe: { enabled: true } }").dedupe == DedupeConfiguration())
    }

    @Test(arguments: [
        (#"{ collapse: "yes" }"#, "collapse"),
        (#"{ dedupe: true }"#, "dedupe"),
        (#"{ dedupe: { windowMs: 0 } }"#, "dedupe.windowMs"),
        (#"{ dedupe: { windowMs: 2147483648 } }"#, "dedupe.windowMs"),
        (#"{ dedupe: { maxEntries: 0 } }"#, "dedupe.maxEntries"),
        (#"{ dedupe: { maxEntries: 10000001 } }"#, "dedupe.maxEntries"),
        (#"{ dedupe: { window: 5 } }"#, "dedupe.window"),
        (#"{ deadLetter: { topic: "dlt", reasons: ["duplicate"] } }"#, "deadLetter.reasons"),
        (#"{ deadLetter: { topic: "dlt", reasons: ["collapsed"] } }"#, "deadLetter.reasons"),
    ])
    func badValuesAreNamed(_ text: String, _ key: String) {
        #expect(Self.errorKey(text) == key, "\(text)")
    }
}
