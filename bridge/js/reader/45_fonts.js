// Module fonts: text drawn in a web font is read only when the font draws its characters as the
// characters they are (issue 40: a lying font shows a person one text while the DOM holds another).
  // The pixel proof says that a run draws something; a web font decides what. For a run whose
  // font-family names a face of document.fonts (a web font: @font-face or FontFace), each
  // distinct character is drawn alone, in the run's own font (style, weight, stretch, caps; the
  // whole family list, so the browser picks the face per character as it does on the page), at
  // FONT_PX on a canvas of this isolated world (never in the page's DOM), and recognised: its
  // glyph is compared with the glyphs system fonts draw (the generic families and DejaVu's,
  // FONT_REFS, never a family a web font of the page claims) for a reference alphabet (ASCII
  // letters, digits, punctuation) and for every character the font's runs hold. A glyph is
  // compared low-resolution: its ink box's place against the baseline, in em, and its ink
  // resampled to FONT_GRID x FONT_GRID and normalised (a correlation). A character fails when its
  // glyph matches another character's references closely (under FONT_SURE) and its own worse by
  // more than FONT_MARGIN (thin strokes and round shapes, FONT_CLASSES, are not told apart); when
  // the font draws nothing where a system font draws something; or when it is a private-use code
  // point the font draws, or no system font draws it at all (an icon font's glyph: an icon is
  // not the text it encodes, whatever system font may hold the same icon).
  // Only the runs holding a character that fails are withheld (WHY_FONT): an icon does not
  // withhold the page's other text. Verdicts are kept per font and set of faces (a face replaced
  // under the same family name is judged again) in this world, for the document's life. What it
  // cannot check is withheld too: a face not loaded, OpenType features the page turns on beyond
  // FONT_FEATURES_SAFE (a stylistic set could swap glyphs), font variations.
  // Not checked: substitutions a font applies in context by default (calt, rlig, ligatures such
  // as Material Icons' words), glyphs a font draws differently at other sizes (hinting, bitmap
  // strikes): the check draws at FONT_PX; scripts whose letters the references draw but the
  // comparison cannot tell apart are judged by the same rule. System fonts are trusted.
  const FONT_MARGIN = 0.12, FONT_SURE = 0.18, FONT_GRID = 10, FONT_POS = 1.5, FONT_PX = 48;
  const FONT_CLASSES = ['!|/\\()[]{}iIjlJ1.,:;\'`"', 'oO0'];
  const sameClass = (a, b) => FONT_CLASSES.some((k) => k.includes(a) && k.includes(b));
  const FONT_GENERIC = new Set(['serif', 'sans-serif', 'monospace', 'cursive', 'fantasy', 'system-ui', 'ui-serif', 'ui-sans-serif', 'ui-monospace', 'ui-rounded', 'math', 'emoji', 'fangsong', '-webkit-body', '-webkit-pictograph']);
  const FONT_FEATURES_SAFE = new Set(['kern', 'liga', 'clig', 'tnum', 'lnum', 'onum', 'pnum', 'zero', 'case', 'frac', 'sups', 'subs', 'smcp', 'c2sc', 'ordn']);
  const FONT_REFS = ['sans-serif', 'serif', 'monospace', '"DejaVu Sans"', '"DejaVu Serif"', '"DejaVu Sans Mono"'];
  const FONT_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
  const fontState = globalThis.__browserAgentFonts || (globalThis.__browserAgentFonts = {
    ids: new WeakMap(), next: 1, verdicts: new Map(), refs: new Map(), canvas: null, ctx: null,
  });
  if (fontState.doc !== doc) { fontState.doc = doc; fontState.verdicts.clear(); fontState.refs.clear(); }
  // The web font faces by family name (lower case, unquoted), read once per evaluation.
  let webFaces = null;
  const facesByFamily = () => {
    if (webFaces) return webFaces;
    webFaces = new Map();
    try {
      for (const f of doc.fonts) {
        const fam = String(f.family).replace(/^\s*["']|["']\s*$/g, '').trim().toLowerCase();
        if (!webFaces.has(fam)) webFaces.set(fam, []);
        if (!fontState.ids.has(f)) fontState.ids.set(f, fontState.next++);
        webFaces.get(fam).push(fontState.ids.get(f) + ':' + f.status);
      }
    } catch (e) {}
    return webFaces;
  };
  const familiesOf = (list) => {
    const out = [];
    list.replace(/\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^,]+))\s*(?:,|$)/g, (m, a, b, c) => {
      const f = (a !== undefined ? a : b !== undefined ? b : (c || '')).trim().toLowerCase();
      if (f) out.push(f);
      return m;
    });
    return out;
  };
  // The font of a run's parent, when it names a web font: {key, spec, caps, stretch, px, why}.
  const fontCache = new Map();
  const webFontOf = (p, s) => {
    const ff = s.fontFamily || '';
    const sig = [ff, s.fontStyle, s.fontWeight, s.fontStretch, s.fontVariantCaps, s.fontSize, s.fontFeatureSettings, s.fontVariationSettings, s.textTransform].join('|');
    if (fontCache.has(sig)) return fontCache.get(sig);
    const faces = facesByFamily();
    const ids = [];
    for (const f of familiesOf(ff)) {
      if (FONT_GENERIC.has(f)) break;
      if (faces.has(f)) ids.push(f + '=' + faces.get(f).join(','));
    }
    let out = null;
    if (ids.length) {
      const px = FONT_PX;
      const style = /^oblique/.test(s.fontStyle) ? 'oblique' : (s.fontStyle || 'normal');
      out = { px, caps: s.fontVariantCaps || 'normal', stretch: s.fontStretch || 'normal', transform: s.textTransform || 'none', why: '' };
      out.spec = style + ' ' + (s.fontWeight || '400') + ' ' + px + 'px ' + ff;
      out.refSpec = (f) => style + ' ' + (s.fontWeight || '400') + ' ' + px + 'px ' + f;
      out.key = [out.spec, out.caps, out.stretch, ids.join(';')].join('|');
      const feats = (s.fontFeatureSettings || 'normal') === 'normal' ? [] : s.fontFeatureSettings.split(',').map((x) => x.trim());
      for (const f of feats) {
        const m = /^["']?(\w{4})["']?(?:\s+(\w+))?$/.exec(f);
        if (!m || (!FONT_FEATURES_SAFE.has(m[1]) && m[2] !== '0' && m[2] !== 'off')) out.why = 'OpenType features not checked (' + f + ')';
      }
      if ((s.fontVariationSettings || 'normal') !== 'normal') out.why = out.why || 'font variations not checked';
    }
    fontCache.set(sig, out);
    return out;
  };
  // A glyph: the ink of c drawn alone in font f (px), or null when it draws nothing.
  const glyphOf = (f, spec, c) => {
    const px = f.px;
    const W = Math.ceil(px * 3), H = Math.ceil(px * 2.4), ox = Math.round(px * 0.8), base = Math.round(px * 1.7);
    if (!fontState.canvas || fontState.canvas.width !== W || fontState.canvas.height !== H) {
      fontState.canvas = doc.createElement('canvas');
      fontState.canvas.width = W;
      fontState.canvas.height = H;
      fontState.ctx = fontState.canvas.getContext('2d', { willReadFrequently: true });
    }
    const ctx = fontState.ctx;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = spec;
    try { ctx.fontVariantCaps = f.caps; } catch (e) {}
    try { ctx.fontStretch = f.stretch; } catch (e) {}
    ctx.fontKerning = 'none';
    ctx.textBaseline = 'alphabetic';
    ctx.fillStyle = '#000';
    ctx.fillText(c, ox, base);
    const d = ctx.getImageData(0, 0, W, H).data;
    let x0 = W, y0 = H, x1 = -1, y1 = -1;
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        if (d[(y * W + x) * 4 + 3] > 60) {
          if (x < x0) x0 = x;
          if (x > x1) x1 = x;
          if (y < y0) y0 = y;
          if (y > y1) y1 = y;
        }
      }
    }
    if (x1 < 0) return null;
    const bw = x1 - x0 + 1, bh = y1 - y0 + 1, N = FONT_GRID;
    const g = new Float32Array(N * N), cnt = new Float32Array(N * N);
    // A square around the ink box's longer side, so that aspect counts in the shape; each cell the
    // mean of the pixels in it.
    const side = Math.max(bw, bh), cx0 = x0 - (side - bw) / 2, cy0 = y0 - (side - bh) / 2;
    for (let y = Math.max(0, Math.floor(cy0)); y < Math.min(H, Math.ceil(cy0 + side)); y++) {
      for (let x = Math.max(0, Math.floor(cx0)); x < Math.min(W, Math.ceil(cx0 + side)); x++) {
        const gx = Math.min(N - 1, Math.max(0, Math.floor(((x + 0.5 - cx0) / side) * N)));
        const gy = Math.min(N - 1, Math.max(0, Math.floor(((y + 0.5 - cy0) / side) * N)));
        g[gy * N + gx] += d[(y * W + x) * 4 + 3] / 255;
        cnt[gy * N + gx]++;
      }
    }
    for (let i = 0; i < g.length; i++) if (cnt[i]) g[i] /= cnt[i];
    let mean = 0;
    for (const v of g) mean += v;
    mean /= g.length;
    let norm = 0;
    for (let i = 0; i < g.length; i++) { g[i] -= mean; norm += g[i] * g[i]; }
    norm = Math.sqrt(norm) || 1;
    for (let i = 0; i < g.length; i++) g[i] /= norm;
    return { g, top: (base - y0) / px, bottom: (base - y1 - 1) / px, w: bw / px };
  };
  const glyphDist = (a, b) => {
    if (!a || !b) return a === b ? 0 : 3;
    let dot = 0;
    for (let i = 0; i < a.g.length; i++) dot += a.g[i] * b.g[i];
    return (1 - dot) + FONT_POS * (Math.abs(a.top - b.top) + Math.abs(a.bottom - b.bottom) + 0.5 * Math.abs(a.w - b.w));
  };
  // The reference glyphs of c in the generic fonts, at f's size and style.
  // The reference fonts: the generic families, and the named system families of FONT_REFS no web
  // font of the page claims (a page may name a face of its own after a system font).
  let refFonts = null;
  const refFontsOf = () => {
    if (refFonts) return refFonts;
    const faces = facesByFamily();
    refFonts = FONT_REFS.filter((f) => !faces.has(f.replace(/"/g, '').toLowerCase()));
    return refFonts;
  };
  const refsOf = (f, c) => {
    const refs = refFontsOf();
    const k = f.refSpec('') + '|' + f.caps + '|' + refs.join(',') + '|' + c;
    let r = fontState.refs.get(k);
    if (!r) {
      r = refs.map((g) => glyphOf(f, f.refSpec(g), c));
      fontState.refs.set(k, r);
    }
    return r;
  };
  const refDist = (gl, f, c) => Math.min(...refsOf(f, c).map((r) => glyphDist(gl, r)));
  // drawsAs: does font f draw c as c (or, under a text transform, as what the transform makes
  // of it)? cands are the other characters it must be told from.
  const drawsAs = (f, c, cands) => {
    const vk = f.key + '|' + f.transform + '|' + c;
    if (fontState.verdicts.has(vk)) return fontState.verdicts.get(vk);
    const gl = glyphOf(f, f.spec, c);
    const own = [c];
    if (f.transform === 'uppercase' || f.transform === 'capitalize') own.push(c.toUpperCase());
    if (f.transform === 'lowercase') own.push(c.toLowerCase());
    let ok;
    const drawn = own.some((o) => refsOf(f, o).some((r) => r));
    if (/\p{Co}/u.test(c)) ok = !gl; // a private-use code point a web font draws: an icon, not text
    else if (!gl) ok = !drawn; // the font draws nothing where a system font draws something: a lie
    else if (!drawn) ok = false; // no system font draws it (an icon in the private use area): not text
    else {
      let mine = Infinity;
      for (const o of own) mine = Math.min(mine, refDist(gl, f, o));
      let best = mine, bx = c;
      for (const x of cands) {
        if (own.includes(x)) continue;
        const dx = refDist(gl, f, x);
        if (dx < best) { best = dx; bx = x; }
      }
      // A lie draws another character's glyph: it matches that character's references closely
      // (best under FONT_SURE) and its own much worse (by more than FONT_MARGIN). Thin strokes
      // (l, I, 1, |, /, brackets) and round ones (o, O, 0) are told apart by no font reliably.
      ok = mine - best <= FONT_MARGIN || best >= FONT_SURE || own.some((o) => sameClass(o, bx));
    }
    fontState.verdicts.set(vk, ok);
    return ok;
  };
  const charsOfRun = (data) => {
    const out = new Set();
    for (const ch of data) if (!/[\s\p{M}\p{Cf}]/u.test(ch)) out.add(ch);
    return out;
  };
  // The characters of the frame's runs drawn in web fonts, per font key: candidates besides the
  // reference alphabet.
  const fontCands = new Map();
  // fontWhy: why run t (parent p, style s) is not read for its font, or ''.
  const fontWhy = (t, p, s) => {
    if (opts.mode === MODE_LAYOUT) return '';
    const f = webFontOf(p, s);
    if (!f) return '';
    if (f.why) return f.why;
    try { if (!doc.fonts.check(f.spec, t.data)) return 'web font not loaded'; } catch (e) { return 'web font not checked'; }
    let cands = fontCands.get(f.key);
    if (!cands) { cands = new Set(FONT_ALPHABET); fontCands.set(f.key, cands); }
    const mine = charsOfRun(t.data);
    for (const c of mine) cands.add(c);
    for (const c of mine) {
      if (!drawsAs(f, c, cands)) return 'a web font that does not draw its characters as themselves';
    }
    return '';
  };
