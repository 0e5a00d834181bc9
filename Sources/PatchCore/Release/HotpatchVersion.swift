/// The release of hotpatch, in one place: `patchctl --version` and `patchd --version` print it.
public enum Hotpatch {
    public static let version = "0.12.0"
}
