// encodeJpeg draws a PNG screenshot at size (CSS pixels × scale, whatever the
// device pixel ratio), paints rects black and encodes a JPEG, all in the
// service worker: the unredacted pixels never leave the browser.
export async function encodeJpeg(pngBase64, size, rects, quality) {
  const bitmap = await createImageBitmap(new Blob([fromBase64(pngBase64)], { type: 'image/png' }));
  try {
    const canvas = new OffscreenCanvas(size.width, size.height);
    const ctx = canvas.getContext('2d');
    ctx.drawImage(bitmap, 0, 0, size.width, size.height);
    ctx.fillStyle = '#000';
    for (const r of rects) ctx.fillRect(r.x, r.y, r.width, r.height);
    const blob = await canvas.convertToBlob({ type: 'image/jpeg', quality });
    return toBase64(new Uint8Array(await blob.arrayBuffer()));
  } finally {
    bitmap.close();
  }
}

function fromBase64(s) {
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(s);
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function toBase64(bytes) {
  if (bytes.toBase64) return bytes.toBase64();
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}
