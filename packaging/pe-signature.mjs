// The Authenticode signature of a PE file (Microsoft PE/COFF specification, "The Attribute Certificate
// Table (Image Only)": data directory 4, IMAGE_DIRECTORY_ENTRY_SECURITY, whose VirtualAddress is a file
// offset and whose Size covers the WIN_CERTIFICATE entries, which sit at the end of the file). node.exe is
// signed by the OpenJS Foundation; injecting the SEA blob (postject) changes the image, so the kept
// signature no longer matches and Windows (Defender, WDAC, AppLocker) sees a corrupted signature.
// `stripSignature` does what `osslsigncode remove-signature` does: clear the directory entry and cut
// the certificate table off the end. The optional header's CheckSum is recomputed (the PE checksum
// algorithm of imagehlp CheckSumMappedFile), as signing tools do. No upstream counterpart in flannel.

/** Offsets of the PE parts this module touches; throws when `buf` is not a PE image. */
export function peLayout(buf) {
  if (buf.length < 0x40 || buf.readUInt16LE(0) !== 0x5a4d) throw new Error('not a PE file (no MZ header)');
  const pe = buf.readUInt32LE(0x3c);
  if (pe + 24 > buf.length || buf.readUInt32LE(pe) !== 0x00004550) throw new Error('not a PE file (no PE signature)');
  const opt = pe + 24;
  const magic = buf.readUInt16LE(opt);
  if (magic !== 0x10b && magic !== 0x20b) throw new Error(`unknown optional header magic 0x${magic.toString(16)}`);
  const dirs = opt + (magic === 0x20b ? 112 : 96);
  const count = buf.readUInt32LE(dirs - 4);
  if (count < 5) throw new Error('the PE file has no security data directory');
  return { checksum: opt + 64, security: dirs + 4 * 8 };
}

/** The security directory entry: the certificate table's file offset and size (both 0: unsigned). */
export function securityDirectory(buf) {
  const { security } = peLayout(buf);
  return { offset: buf.readUInt32LE(security), size: buf.readUInt32LE(security + 4) };
}

/** The PE checksum (CheckSumMappedFile): 16-bit one's-complement sum skipping CheckSum, plus the length. */
export function peChecksum(buf) {
  const { checksum } = peLayout(buf);
  let sum = 0;
  for (let i = 0; i + 1 < buf.length; i += 2) {
    if (i === checksum || i === checksum + 2) continue;
    sum += buf.readUInt16LE(i);
    sum = (sum & 0xffff) + (sum >>> 16);
  }
  if (buf.length % 2 === 1) {
    sum += buf[buf.length - 1];
    sum = (sum & 0xffff) + (sum >>> 16);
  }
  return ((sum & 0xffff) + buf.length) >>> 0;
}

/** A copy of `buf` without its Authenticode signature (unchanged content when it has none). */
export function stripSignature(buf) {
  const { offset, size } = securityDirectory(buf);
  const { security, checksum } = peLayout(buf);
  if (offset === 0 && size === 0) return { image: buf, removed: 0 };
  // The table is at the end of the file (the spec requires it); anything after it is kept as it was.
  const end = offset + size;
  const image = Buffer.from(offset > 0 && end <= buf.length && end >= buf.length - 8 ? buf.subarray(0, offset) : buf);
  image.writeUInt32LE(0, security);
  image.writeUInt32LE(0, security + 4);
  image.writeUInt32LE(peChecksum(image), checksum);
  return { image, removed: buf.length - image.length };
}
