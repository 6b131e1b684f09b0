import Foundation
import Testing
@testable import PushWorkerCore

// Settings types of the tests (at file scope: their names appear in messages).
struct ContentSettings: Decodable, Sendable, Equatable {
    var baseURL: URL
    var directory: String?
}

struct RetrySettings: Decodable, Sendable, Equatable {
    var attempts: Int
    var delays: [Duration]
}

struct NestedSettings: Decodable, Sendable, Equatable {
    struct Endpoint: Decodable, Sendable, Equatable {
        var url: URL
        var weight: Double?
    }
    var retry: RetrySettings
    var endpoints: [Endpoint]
    var labels: [String: String]?
    var enabled: Bool
    var ratio: Float?
    var smallCount: UInt8?
}

struct RenamedSettings: Decodable, Sendable, Equatable {
    var cacheURL: String
    var maxItems: Int
    enum CodingKeys: String, CodingKey {
        case cacheURL = "cache-url"
        case maxItems = "max_items"
    }
}

struct DefaultedSettings: Decodable, Sendable, Equatable {
    var timeout: Duration = .seconds(5)
    var tags: [String] = []
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        timeout = try container.decodeIfPresent(Duration.self, forKey: .timeout) ?? timeout
        tags = try container.decodeIfPresent([String].self, forKey: .tags) ?? tags
    }
    init() {}
    enum CodingKeys: String, CodingKey { case timeout, tags }
}

/// Checks of its own in `init(from:)`, after decoding.
struct CheckedSettings: Decodable, Sendable {
    var endpoint: URL
    var name: String
    enum CodingKeys: String, CodingKey { case endpoint, name }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        endpoint = try container.decode(URL.self, forKey: .endpoint)
        name = try container.decode(String.self, forKey: .name)
        guard endpoint.scheme == "https" else {
            throw DecodingError.dataCorrupted(.init(codingPath: container.codingPath + [CodingKeys.endpoint], debugDescription: "must be https"))
        }
        guard !name.isEmpty else {
            throw DecodingError.dataCorrupted(.init(codingPath: container.codingPath + [CodingKeys.name], debugDescription: "must not be empty"))
        }
    }
}

/// A type that can never be built from finite JSON: probing it must end, not recurse for ever.
final class Chain: Decodable, Sendable {
    let next: Chain
}

/// A recursive settings type.
struct TreeSettings: Decodable, Sendable {
    var children: [TreeSettings]
}

/// Free-form JSON in a setting, and a list that may hold nulls.
struct FreeFormSettings: Decodable, Sendable {
    var extra: JSONValue
    var names: [String?]?
}

enum Mode: String, Decodable, Sendable { case fast, careful }

struct ModeSettings: Decodable, Sendable, Equatable {
    var mode: Mode
}

/// The strict decoder of worker settings (`WorkerSettings.decode(_:section:)`): what Foundation's
/// `JSONDecoder` would let through is refused with the key's full path.
@Suite struct WorkerSettingsDecoderTests {
    static func settings(_ json5: String) throws(WorkerSettingsError) -> WorkerSettings { try WorkerSettings(json5: json5) }

    static func error<T: Decodable>(_ type: T.Type, _ json5: String, section: String = "s") throws -> WorkerSettingsError {
        do {
            _ = try settings(json5).decode(type, section: section)
        } catch {
            return error
        }
        Issue.record("\(json5) decoded as \(type)")
        return WorkerSettingsError(.syntax, key: "", "decoded")
    }

    @Test func decodesASectionWithAURLAndAnOptional() throws {
        let settings = try Self.settings(#"{ "content-update": { baseURL: "https://cdn.example.com/content", directory: "/var/lib/content" } }"#)
        #expect(settings.sectionNames == ["content-update"])
        let decoded = try settings.decode(ContentSettings.self, section: "content-update")
        #expect(decoded == ContentSettings(baseURL: URL(string: "https://cdn.example.com/content")!, directory: "/var/lib/content"))
        let withoutDirectory = try Self.settings(#"{ c: { baseURL: "http://x", directory: null } }"#).decode(ContentSettings.self, section: "c")
        #expect(withoutDirectory.directory == nil)
    }

    @Test func anUnknownKeyIsRefusedWithItsPathAndTheKnownKeys() throws {
        // The misspelt key shows first as a missing baseURL; the unknown key is the report.
        let misspelt = try Self.error(ContentSettings.self, #"{ "content-update": { baseUrl: "https://x", directory: "/d" } }"#, section: "content-update")
        #expect(misspelt.code == .unknownKey)
        #expect(misspelt.key == "workerSettings.content-update.baseUrl")
        #expect(misspelt.description == "config key 'workerSettings.content-update.baseUrl': is not a setting of ContentSettings; known: baseURL, directory")

        // Beside every required key (decoding succeeded): still refused.
        let extra = try Self.error(ContentSettings.self, #"{ s: { baseURL: "https://x", direcotry: "/d" } }"#)
        #expect(extra.code == .unknownKey)
        #expect(extra.key == "workerSettings.s.direcotry")
        #expect(extra.message.hasSuffix("known: baseURL, directory"))
    }

    @Test func anUnknownKeyDeepInsideIsRefusedWithItsFullPath() throws {
        let text = #"""
        { s: { retry: { attempts: 3, delays: [100, 200] }, enabled: true,
               endpoints: [ { url: "http://a" }, { url: "http://b", wieght: 2 } ] } }
        """#
        let error = try Self.error(NestedSettings.self, text)
        #expect(error.code == .unknownKey)
        #expect(error.key == "workerSettings.s.endpoints[1].wieght")
        #expect(error.message == "is not a setting of NestedSettings.Endpoint; known: url, weight")

        let inRetry = try Self.error(NestedSettings.self, #"{ s: { retry: { attempts: 3, delays: [], jitter: true }, enabled: true, endpoints: [] } }"#)
        #expect(inRetry.key == "workerSettings.s.retry.jitter")
        #expect(inRetry.message == "is not a setting of RetrySettings; known: attempts, delays")
    }

    @Test func nestedStructsArraysDictionariesAndNumbers() throws {
        let text = #"""
        { s: { retry: { attempts: 3, delays: [100, 2500] }, enabled: false,
               endpoints: [ { url: "http://a", weight: 1 }, { url: "https://b:8443/x", weight: 0.5 } ],
               labels: { team: "push", "any-key": "ok" }, ratio: 0.25, smallCount: 255.0 } }
        """#
        let decoded = try Self.settings(text).decode(NestedSettings.self, section: "s")
        #expect(decoded.retry == RetrySettings(attempts: 3, delays: [.milliseconds(100), .milliseconds(2500)]))
        #expect(decoded.endpoints.map(\.url.absoluteString) == ["http://a", "https://b:8443/x"])
        #expect(decoded.endpoints.map(\.weight) == [1, 0.5])
        #expect(decoded.labels == ["team": "push", "any-key": "ok"])
        #expect(decoded.enabled == false)
        #expect(decoded.ratio == 0.25)
        #expect(decoded.smallCount == 255)
    }

    @Test func aMissingKeyIsNamedWithItsPath() throws {
        let top = try Self.error(ContentSettings.self, #"{ s: { directory: "/d" } }"#)
        #expect(top.code == .missingKey)
        #expect(top.key == "workerSettings.s.baseURL")
        #expect(top.message == "is missing; ContentSettings requires it")

        // A missing section reads as an empty object.
        let noSection = try Self.error(ContentSettings.self, "{}", section: "content-update")
        #expect(noSection.key == "workerSettings.content-update.baseURL")
        #expect(noSection.code == .missingKey)

        let nested = try Self.error(NestedSettings.self, #"{ s: { retry: { delays: [] }, enabled: true, endpoints: [] } }"#)
        #expect(nested.key == "workerSettings.s.retry.attempts")
        #expect(nested.message == "is missing; RetrySettings requires it")

        let null = try Self.error(ContentSettings.self, #"{ s: { baseURL: null } }"#)
        #expect(null.code == .missingKey)
        #expect(null.key == "workerSettings.s.baseURL")
        #expect(null.message.hasPrefix("is null"))
    }

    @Test func aTypeMismatchIsNamedWithItsPath() throws {
        let string = try Self.error(RetrySettings.self, #"{ s: { attempts: "3", delays: [] } }"#)
        #expect(string.code == .typeMismatch)
        #expect(string.key == "workerSettings.s.attempts")
        #expect(string.message == "must be an integer, got a string")

        let element = try Self.error(RetrySettings.self, #"{ s: { attempts: 3, delays: [100, "2s"] } }"#)
        #expect(element.code == .typeMismatch)
        #expect(element.key == "workerSettings.s.delays[1]")

        let fraction = try Self.error(RetrySettings.self, #"{ s: { attempts: 2.5, delays: [] } }"#)
        #expect(fraction.code == .typeMismatch)
        #expect(fraction.message == "must be an integer, got a number with a fraction")

        let notList = try Self.error(RetrySettings.self, #"{ s: { attempts: 1, delays: 100 } }"#)
        #expect(notList.key == "workerSettings.s.delays")
        #expect(notList.message == "must be a list, got an integer")

        let notObject = try Self.error(NestedSettings.self, #"{ s: { retry: [1], enabled: true, endpoints: [] } }"#)
        #expect(notObject.key == "workerSettings.s.retry")
        #expect(notObject.message == "must be an object, got a list")

        let bool = try Self.error(NestedSettings.self, #"{ s: { retry: { attempts: 1, delays: [] }, enabled: "yes", endpoints: [] } }"#)
        #expect(bool.key == "workerSettings.s.enabled")
        #expect(bool.message == "must be true or false, got a string")
    }

    @Test func valuesOutOfRangeAndBadURLsAndDurationsAreInvalid() throws {
        let range = try Self.error(NestedSettings.self, #"{ s: { retry: { attempts: 1, delays: [] }, enabled: true, endpoints: [], smallCount: 256 } }"#)
        #expect(range.code == .invalidValue)
        #expect(range.key == "workerSettings.s.smallCount")
        #expect(range.message == "must be an integer from 0 to 255, got 256")

        let relative = try Self.error(ContentSettings.self, #"{ s: { baseURL: "cdn.example.com/content" } }"#)
        #expect(relative.code == .invalidValue)
        #expect(relative.key == "workerSettings.s.baseURL")
        #expect(relative.message.contains("absolute URL"))

        let negative = try Self.error(RetrySettings.self, #"{ s: { attempts: 1, delays: [-1] } }"#)
        #expect(negative.code == .invalidValue)
        #expect(negative.key == "workerSettings.s.delays[0]")

        // A type's own refusal (an enum's raw value) keeps its path.
        let mode = try Self.error(ModeSettings.self, #"{ s: { mode: "reckless" } }"#)
        #expect(mode.code == .invalidValue)
        #expect(mode.key == "workerSettings.s.mode")
        #expect(try Self.settings(#"{ s: { mode: "careful" } }"#).decode(ModeSettings.self, section: "s").mode == .careful)
    }

    @Test func codingKeysNameTheKeysInTheFile() throws {
        let decoded = try Self.settings(#"{ s: { "cache-url": "http://cache", max_items: 10 } }"#).decode(RenamedSettings.self, section: "s")
        #expect(decoded == RenamedSettings(cacheURL: "http://cache", maxItems: 10))
        // The property name is not a key of the file.
        let swiftName = try Self.error(RenamedSettings.self, #"{ s: { cacheURL: "http://cache", max_items: 10 } }"#)
        #expect(swiftName.code == .unknownKey)
        #expect(swiftName.key == "workerSettings.s.cacheURL")
        #expect(swiftName.message == "is not a setting of RenamedSettings; known: cache-url, max_items")
    }

    @Test func optionalAndDefaultedKeysMayBeLeftOutAndStillRefuseStrangers() throws {
        #expect(try Self.settings("{}").decode(DefaultedSettings.self, section: "s") == DefaultedSettings())
        let set = try Self.settings(#"{ s: { timeout: 250, tags: ["a"] } }"#).decode(DefaultedSettings.self, section: "s")
        #expect(set.timeout == .milliseconds(250))
        #expect(set.tags == ["a"])
        let stranger = try Self.error(DefaultedSettings.self, #"{ s: { timeoutMs: 250 } }"#)
        #expect(stranger.key == "workerSettings.s.timeoutMs")
        #expect(stranger.message == "is not a setting of DefaultedSettings; known: tags, timeout")
    }

    @Test func sectionsMustBeObjectsAndTheTextJSON5() throws {
        #expect(throws: WorkerSettingsError.self) { try WorkerSettings(json5: #"{ s: 1 }"#) }
        do {
            _ = try WorkerSettings(["s": .array([])])
            Issue.record("a list section was taken")
        } catch {
            #expect(error.code == .typeMismatch)
            #expect(error.key == "workerSettings.s")
        }
        do {
            _ = try WorkerSettings(json5: "{ s: { a: 1 ")
            Issue.record("broken JSON5 was taken")
        } catch {
            #expect(error.code == .syntax)
        }
    }

    @Test func aTypesOwnChecksKeepTheirPathAndAMisspeltKeyIsStillNamed() throws {
        let http = try Self.error(CheckedSettings.self, #"{ s: { endpoint: "http://x", name: "a" } }"#)
        #expect(http.code == .invalidValue)
        #expect(http.key == "workerSettings.s.endpoint")
        #expect(http.message == "must be https")
        // The probing pass passes the URL check (its placeholder is https with a host): the typo is named.
        let misspelt = try Self.error(CheckedSettings.self, #"{ s: { endPoint: "https://x", name: "a" } }"#)
        #expect(misspelt.code == .unknownKey)
        #expect(misspelt.key == "workerSettings.s.endPoint")
        #expect(misspelt.message == "is not a setting of CheckedSettings; known: endpoint, name")
        // A check the placeholders fail (an empty name) makes the probing pass fail: the missing key is
        // reported, never a key the type was not yet asked for.
        let missing = try Self.error(CheckedSettings.self, #"{ s: { endpoint: "https://x", nmae: "a" } }"#)
        #expect(missing.code == .missingKey)
        #expect(missing.key == "workerSettings.s.name")
    }

    @Test func deepValuesAndEndlessTypesEndWithAnError() throws {
        let endless = try Self.error(Chain.self, #"{ s: { next: { nexx: 1 } } }"#)
        #expect(endless.code == .missingKey)
        #expect(endless.key == "workerSettings.s.next.next")

        let free = try Self.settings(#"{ s: { extra: { a: [1, "two", null, { b: true }] }, names: ["a", null] } }"#).decode(FreeFormSettings.self, section: "s")
        #expect(free.extra == .object(["a": .array([.int(1), .string("two"), .null, .object(["b": .bool(true)])])]))
        #expect(free.names == ["a", nil])
        let nullElement = try Self.error(RetrySettings.self, #"{ s: { attempts: 1, delays: [null] } }"#)
        #expect(nullElement.key == "workerSettings.s.delays[0]")
        #expect(nullElement.message == "is null; a duration in milliseconds (an integer) is required")
        let deep = String(repeating: "[", count: 150) + String(repeating: "]", count: 150)
        // Refused (JSONValue's own decoding tries each shape in turn, so the message is its last attempt's).
        let tooDeep = try Self.error(FreeFormSettings.self, "{ s: { extra: \(deep) } }")
        #expect(tooDeep.key.hasPrefix("workerSettings.s.extra"))
        // A recursive type over deep data stops at 100 levels below the section.
        let tree = String(repeating: "{ children: [", count: 60) + "{ children: [] }" + String(repeating: "] }", count: 60)
        let tooDeepTree = try Self.error(TreeSettings.self, "{ s: \(tree) }")
        #expect(tooDeepTree.code == .invalidValue)
        #expect(tooDeepTree.message == "is nested more than 100 levels deep")
        let shallow = String(repeating: "{ children: [", count: 10) + "{ children: [] }" + String(repeating: "] }", count: 10)
        #expect(try Self.settings("{ s: \(shallow) }").decode(TreeSettings.self, section: "s").children.count == 1)
    }
}
