import Foundation
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultTestSupport
import KeyVaultStore
import Testing
@testable import KeyVaultServer

/// The secret file: made on first start, mode 0600, 64 hex digits; read back the same;
/// refused with a message naming the file when others can read it or it is not a secret.
@Test func theSecretFileIsMadeOnceWithMode0600AndReadBackTheSame() throws {
    let directory = try TemporaryDirectory("kv-secret")
    let path = directory.path("secret")
    let made = try ServerSecret.load(orCreateAt: path)
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    #expect((attributes[.posixPermissions] as? Int) == 0o600)
    let text = try String(contentsOfFile: path, encoding: .utf8)
    #expect(text.count == 65 && text.hasSuffix("\n") && text.dropLast().allSatisfy { $0.isHexDigit && !$0.isUppercase })
    #expect(made.isPersistent && !ServerSecret.ephemeral().isPersistent)
    let again = try ServerSecret.load(orCreateAt: path)
    #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
    // The same secret: a session one opens, the other knows.
    let device = DeviceID(unchecked: String(repeating: "d", count: 32))
    let session = try Sessions(secret: made).open(for: device, now: 1000)
    let known = try #require(try Sessions(secret: again).get(session.id, now: 1000))
    #expect(known.device == device && known.key == session.key)
    #expect(try Sessions(secret: .ephemeral()).get(session.id, now: 1000) == nil)
    #expect(try Sessions(secret: again).get(session.id, now: 1000 + Sessions.lifetime + 1) == nil)  // expired
}

@Test func aSecretFileOthersCanReadOrThatHoldsNoSecretIsRefused() throws {
    let directory = try TemporaryDirectory("kv-secret")
    let path = directory.path("secret")
    _ = try ServerSecret.load(orCreateAt: path)
    try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
    var configuration = ServerConfiguration()
    configuration.secretFile = path
    #expect { try configuration.secret() } throws: { error in
        let message = (error as? ConfigurationError)?.message ?? ""
        return message.contains("--secret-file") && message.contains(path) && message.contains("chmod 600")
    }
    for bad in ["", "abc\n", String(repeating: "A", count: 64), String(repeating: "0", count: 66)] {
        try FileManager.default.removeItem(atPath: path)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bad.utf8), attributes: [.posixPermissions: 0o600]))
        #expect { try configuration.secret() } throws: { error in
            ((error as? ConfigurationError)?.message ?? "").contains("64 lowercase hex digits")
        }
    }
}

/// A session id is exactly what the server made: any change to it (tag, expiry, device
/// or random part) names no session, or one whose key the holder does not have.
@Test func aSessionIdCannotBeStretchedOrMovedToAnotherDevice() throws {
    let sessions = try Sessions(secret: .ephemeral())
    let device = DeviceID(unchecked: String(repeating: "d", count: 32))
    let session = try sessions.open(for: device, now: 1000)
    #expect(session.id.count == 96)
    for index in [0, 20, 40, 80] {  // tag, expiry, device, random part
        var bytes = Array(session.id)
        bytes[index] = bytes[index] == "0" ? "1" : "0"
        let changed = try sessions.get(String(bytes), now: 1000)
        #expect(changed == nil || changed?.key != session.key)
    }
    #expect(try sessions.get(session.id.uppercased(), now: 1000) == nil)
    #expect(try sessions.get(String(session.id.dropLast(2)), now: 1000) == nil)
}

/// The secret file is judged on what was opened: a symbolic link, a FIFO (which would
/// hang a plain read) and another user's file are refused, whatever their mode.
@Test func aSymlinkAFIFOOrAnotherUsersFileIsNotTakenForTheSecret() throws {
    let directory = try TemporaryDirectory("kv-secret")
    let real = directory.path("real")
    _ = try ServerSecret.load(orCreateAt: real)
    let link = directory.path("link")
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
    #expect { try ServerSecret.load(orCreateAt: link) } throws: { ($0 as? ConfigurationError)?.message.contains("symbolic link") == true }
    let fifo = directory.path("fifo")
    #expect(mkfifo(fifo, 0o600) == 0)
    #expect { try ServerSecret.load(orCreateAt: fifo) } throws: { ($0 as? ConfigurationError)?.message.contains("not a regular file") == true }
    if geteuid() == 0 {  // as root (CI), a file of `nobody`'s
        #expect(chown(real, 65534, 65534) == 0)
        #expect { try ServerSecret.load(orCreateAt: real) } throws: { ($0 as? ConfigurationError)?.message.contains("another user") == true }
    }
}
