// The in-page reader: what ax.read learns from Chromium's accessibility tree
// and a DOM snapshot (ax.js), read inside the page by one function that
// answers one JSON string. Through chrome.debugger every call costs about a
// millisecond and an answer of many small objects far more than the same
// bytes as one string: one Runtime.callFunctionOn of pageReader replaces
// the Accessibility.* calls, DOMSnapshot.captureSnapshot and their answers.
//
// The driver runs pageReader's source text (String(pageReader)) in an
// isolated world of the frame: it sees the page's DOM but none of its
// scripts' globals or prototype changes, so a hostile page cannot make it
// lie. Neither function may refer to anything outside its own body.
//
// Chromium's tree is the truth it is held to (test/bench/pagereader_test.go
// compares what the broker's projection makes of both reads on every test
// page): roles as Chromium names them, accessible names (accname 1.2, as
// far as the projection shows them), values, states, one StaticText per
// rendered text run, and the clickable marks of ax.js's clickables. It
// emits only what the projection (browser/runtime/observe.go) can show, and
// the elements that text or a control needs as an ancestor there: a
// node's parentAxId is its nearest emitted ancestor.

// pageReader reads the document it runs in and answers
// JSON.stringify({nodes, truncated, frameOwners, incomplete, url, foreign})
// (nodes: PROVIDER.md ax.read's, without backend node IDs; foreign: the
// indexes of the listened elements passed that are of another document, a
// child frame's, which the driver's pierced listener read reaches too).
// opts:
//   tag: the prefix of the event types that tag emitted elements;
//   budgets: {controls, regions, texts, textBytes, nodeBytes}, the
//     projection's (it stops once the projection is full);
//   maxNameLength: a hidden clickable with a longer name is left out;
//   maxValueBytes: the bound of the answer's bytes;
//   listened: listened[k] are the event types the page listens to on the
//     k-th element after opts (the driver reads them over CDP: the page's
//     listeners are not visible from this world).
// Every element node of the answer (el: true) has a listener of the type
// tag + its index added, which the driver reads back over CDP to learn its
// backend node ID; the next call (or removeTags) removes them.
export function pageReader(opts, ...listenedElements) {
  const TAGS = '__dshPageReaderTags';
  for (const [el, type, fn] of globalThis[TAGS] ?? []) el.removeEventListener(type, fn);
  const tags = [];
  globalThis[TAGS] = tags;
  const noop = () => {};

  const budgets = { controls: 120, regions: 24, texts: 240, textBytes: 32768, nodeBytes: 40960, ...opts?.budgets };
  const tagPrefix = String(opts?.tag ?? 'dsh-');
  // The document is tagged too: the driver learns which listeners are the
  // document's own (they make no element clickable).
  document.addEventListener(tagPrefix + 'document', noop);
  tags.push([document, tagPrefix + 'document', noop]);
  // A read stops, truncated, after timeLimit ms (a page of a million
  // nodes before its first control).
  const deadline = performance.now() + (opts?.timeLimit ?? 2000);
  let last; // the last element the walk entered
  const maxNameLength = opts?.maxNameLength ?? 1000;
  const maxBytes = Math.min(opts?.maxValueBytes ?? 900000, 1 << 20);
  const MAX_NODES = 2048;
  const MAX_DEPTH = 512;

  const CONTROL_ROLES = new Set(['button', 'link', 'textbox', 'searchbox', 'combobox', 'checkbox', 'radio', 'tab', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'switch', 'option', 'slider', 'spinbutton']);
  const REGION_ROLES = new Set(['region', 'form', 'group', 'dialog', 'alertdialog', 'main', 'navigation', 'search',
    'complementary', 'banner', 'contentinfo', 'table', 'list', 'tabpanel']);
  const CHECKABLE = new Set(['checkbox', 'switch', 'radio', 'menuitemcheckbox', 'menuitemradio']);
  // Roles named from their content (Chromium's SupportsNameFromContents).
  const FROM_CONTENT = new Set(['button', 'cell', 'checkbox', 'columnheader', 'DisclosureTriangle', 'gridcell', 'heading', 'link',
    'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'radio', 'row', 'rowheader', 'switch', 'tab', 'tooltip', 'treeitem']);
  // Roles that take no name from the author (a title becomes their description).
  const NO_NAME = new Set(['generic', 'none', 'presentation', 'paragraph', 'LabelText', 'Legend', 'caption', 'code', 'deletion',
    'emphasis', 'insertion', 'mark', 'strong', 'subscript', 'superscript', 'term', 'time', 'definition', 'blockquote', 'Pre',
    'ListMarker', 'Abbr', 'Ruby', 'LineBreak', 'Figcaption']);
  const ARIA_ROLES = new Set(['alert', 'alertdialog', 'application', 'article', 'banner', 'blockquote', 'button', 'caption', 'cell',
    'checkbox', 'code', 'columnheader', 'combobox', 'comment', 'complementary', 'contentinfo', 'definition', 'deletion', 'dialog',
    'directory', 'document', 'emphasis', 'feed', 'figure', 'form', 'generic', 'grid', 'gridcell', 'group', 'heading', 'img', 'image',
    'insertion', 'link', 'list', 'listbox', 'listitem', 'log', 'main', 'mark', 'marquee', 'math', 'menu', 'menubar', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'meter', 'navigation', 'none', 'note', 'option', 'paragraph', 'presentation',
    'progressbar', 'radio', 'radiogroup', 'region', 'row', 'rowgroup', 'rowheader', 'scrollbar', 'search', 'searchbox',
    'separator', 'slider', 'spinbutton', 'status', 'strong', 'subscript', 'suggestion', 'superscript', 'switch', 'tab', 'table',
    'tablist', 'tabpanel', 'term', 'textbox', 'time', 'timer', 'toolbar', 'tooltip', 'tree', 'treegrid', 'treeitem',
    'graphics-document', 'graphics-object', 'graphics-symbol']);
  const SKIP = new Set(['script', 'style', 'template', 'head', 'title', 'meta', 'link', 'noscript', 'base']);
  // Elements whose children Chromium's tree does not show as such.
  // (A canvas's children are its fallback content, which Chromium's tree
  // shows although it is not drawn.)
  const LEAVES = new Set(['input', 'textarea', 'select', 'iframe', 'frame', 'object', 'embed', 'video', 'audio', 'img',
    'math', 'fencedframe', 'portal', 'meter', 'progress']);
  const SVG = 'http://www.w3.org/2000/svg';
  // The SVG elements whose text is drawn.
  const SVG_TEXT = new Set(['text', 'tspan', 'textPath']);
  const OWNERS = new Set(['iframe', 'frame', 'object', 'embed', 'fencedframe', 'portal']);
  const TEXT_INPUTS = new Set(['text', 'search', 'email', 'url', 'tel', 'password', 'number']);
  const PRESS = new Set(['click', 'dblclick', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'touchstart', 'touchend']);
  const GRAB = new Set(['mousedown', 'pointerdown', 'touchstart']);
  const CLICK = new Set(['click', 'mousedown', 'mouseup', 'DOMActivate']);
  const POINTERS = new Set(['pointer', 'grab', 'move']);
  // bytes is a string's length in UTF-8 (a lone surrogate as its
  // replacement character's 3).
  const bytes = (s) => {
    let n = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) n += 1;
      else if (c < 0x800) n += 2;
      else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        n += 4;
        i++;
      } else n += 3;
    }
    return n;
  };
  const BLANK = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/; // Go's unicode.IsSpace
  const clean = (s) => String(s ?? '').replace(/\s+/g, ' ').trim();

  // The page's listeners, by element.
  const listenersOf = new Map();
  (opts?.listened ?? []).forEach((types, k) => {
    const el = listenedElements[k];
    if (el?.nodeType === 1 && Array.isArray(types)) listenersOf.set(el, new Set(types.map(String)));
  });
  const listens = (el, set) => {
    const types = listenersOf.get(el);
    if (!types) return false;
    for (const t of types) if (set.has(t)) return true;
    return false;
  };

  const styles = new Map();
  const style = (el) => {
    let s = styles.get(el);
    if (!s) {
      s = getComputedStyle(el);
      styles.set(el, s);
    }
    return s;
  };
  const attr = (el, name) => el.getAttribute(name);
  const tagOf = (el) => (el.namespaceURI === 'http://www.w3.org/1999/xhtml' ? el.localName : el.localName.toLowerCase());

  // The flat tree: a shadow host's children are its shadow root's, a
  // slot's its assigned nodes (else its own).
  const kids = (n) => {
    if (n.nodeType === 1) {
      const shadow = n.shadowRoot ?? closedRoots.get(n);
      if (shadow) return shadow.childNodes;
      if (n.localName === 'slot' && n.assignedNodes) {
        const assigned = n.assignedNodes();
        if (assigned.length) return assigned;
      }
    }
    return n.childNodes;
  };
  // Closed shadow roots are out of this world's reach but for those that
  // hold an element the page listens on (the driver passes it in).
  const closedRoots = new Map(); // host -> its closed shadow root
  for (const el of listenedElements) {
    for (let root = el?.getRootNode?.(), steps = 0; root?.nodeType === 11 && root.host && steps < 64; root = root.host.getRootNode(), steps++) {
      if (root.mode === 'closed') closedRoots.set(root.host, root);
    }
  }

  function roleOf(el, tag) {
    const explicit = attr(el, 'role');
    if (explicit) {
      for (const token of explicit.trim().toLowerCase().split(/\s+/)) {
        // A focusable element is never presentational (ARIA's conflict
        // resolution).
        if ((token === 'none' || token === 'presentation') && focusableNative(el, tag)) continue;
        if (ARIA_ROLES.has(token) || token.startsWith('doc-')) return token === 'img' ? 'image' : token;
      }
    }
    switch (tag) {
      case 'a': case 'area': return el.hasAttribute('href') || el.hasAttributeNS('http://www.w3.org/1999/xlink', 'href') ? 'link' : 'generic';
      case 'button': return 'button';
      case 'input': {
        const type = (attr(el, 'type') ?? '').toLowerCase();
        switch (type) {
          case 'button': case 'submit': case 'reset': case 'image': return 'button';
          case 'checkbox': return 'checkbox';
          case 'radio': return 'radio';
          case 'range': return 'slider';
          case 'number': return 'spinbutton';
          case 'search': return el.hasAttribute('list') ? 'combobox' : 'searchbox';
          case 'hidden': return 'none';
          case 'color': return 'ColorWell';
          case 'file': return 'button';
          case 'date': return 'Date';
          case 'datetime-local': return 'DateTime';
          case 'time': return 'InputTime';
          case 'month': case 'week': return 'DateTime';
          default: return el.hasAttribute('list') ? 'combobox' : 'textbox';
        }
      }
      case 'textarea': return 'textbox';
      case 'select': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'option': return 'option';
      case 'optgroup': return 'group';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'p': return 'paragraph';
      case 'ul': case 'ol': case 'menu': return 'list';
      case 'li': return 'listitem';
      case 'main': return 'main';
      case 'nav': return 'navigation';
      case 'aside': return 'complementary';
      case 'article': return 'article';
      case 'header': return el.closest('article, aside, main, nav, section') ? 'SectionHeader' : 'banner';
      case 'footer': return el.closest('article, aside, main, nav, section') ? 'SectionFooter' : 'contentinfo';
      case 'section': return hasOwnName(el) ? 'region' : 'generic';
      case 'form': return 'form';
      case 'search': return 'search';
      case 'fieldset': case 'details': return 'group';
      case 'legend': return 'Legend';
      case 'div': return attr(el, 'draggable') === 'true' ? 'group' : 'generic';
      case 'summary': return 'DisclosureTriangle';
      case 'dialog': return 'dialog';
      case 'table': return 'table';
      case 'caption': return 'caption';
      case 'tr': return 'row';
      case 'td': return 'cell';
      case 'th': return 'columnheader';
      case 'thead': case 'tbody': case 'tfoot': return 'rowgroup';
      case 'img': return attr(el, 'alt') === '' ? 'none' : 'image';
      case 'svg': return 'image';
      case 'canvas': return 'Canvas';
      case 'label': return 'LabelText';
      case 'figure': return 'figure';
      case 'figcaption': return 'Figcaption';
      case 'blockquote': return 'blockquote';
      case 'hr': return 'separator';
      case 'progress': return 'progressbar';
      case 'meter': return 'meter';
      case 'output': return 'status';
      case 'dl': return 'DescriptionList';
      case 'dt': return 'term';
      case 'dd': return 'definition';
      case 'code': return 'code';
      case 'em': return 'emphasis';
      case 'strong': return 'strong';
      case 'del': case 's': return 'deletion';
      case 'ins': return 'insertion';
      case 'mark': return 'mark';
      case 'sub': return 'subscript';
      case 'sup': return 'superscript';
      case 'time': return 'time';
      case 'pre': return 'Pre';
      case 'br': return 'LineBreak';
      case 'iframe': case 'frame': return 'Iframe';
      case 'video': return 'Video';
      case 'audio': return 'Audio';
      default: return 'generic';
    }
  }

  function focusableNative(el, tag) {
    return el.hasAttribute('tabindex') || el.isContentEditable || ['button', 'input', 'select', 'textarea'].includes(tag) ||
      ((tag === 'a' || tag === 'area') && el.hasAttribute('href'));
  }

  // hasOwnName: a name from the author (a section is a region only then).
  function hasOwnName(el) {
    textSteps = 0;
    return clean(attr(el, 'aria-label')) !== '' || clean(attr(el, 'title')) !== '' || labelledBy(el) !== '';
  }

  function labelledBy(el) {
    const ids = attr(el, 'aria-labelledby');
    if (!ids) return '';
    const root = el.getRootNode();
    const parts = [];
    for (const id of ids.trim().split(/\s+/)) {
      const ref = root.getElementById?.(id) ?? document.getElementById(id);
      if (ref) parts.push(textOf(ref, { referenced: true, depth: 0 }));
    }
    return clean(parts.join(' '));
  }

  // transform applies a text-transform as layout does.
  function transform(text, how) {
    switch (how) {
      case 'uppercase': return text.toUpperCase();
      case 'lowercase': return text.toLowerCase();
      case 'capitalize': return text.replace(/(^|[^\p{L}\p{N}'])(\p{L})/gu, (_, a, b) => a + b.toUpperCase());
      default: return text;
    }
  }

  // rendered is a text node's text as layout shows it: whitespace
  // collapsed as white-space says, transformed as text-transform says.
  function rendered(text, s) {
    const ws = s.whiteSpaceCollapse ?? s.whiteSpace;
    let out = text;
    if (ws === 'preserve' || ws === 'pre' || ws === 'pre-wrap' || ws === 'break-spaces' || ws === 'preserve-breaks' || ws === 'pre-line') {
      if (ws === 'pre-line' || ws === 'preserve-breaks') out = out.replace(/[ \t]+/g, ' ');
    } else {
      out = out.replace(/[ \t\n\r\f]+/g, ' ');
    }
    return transform(out, s.textTransform);
  }

  // drawsPseudo tells whether a ::before or ::after rule may draw text in
  // the tree of root (a document or a shadow root): whether one of its
  // style sheets has such a rule or cannot be read (another origin's).
  // Asking every element for its pseudo-elements' style costs more than
  // the rest of the read. A sheet's answer is kept in the world while its
  // rule count stays (a script may add rules).
  const SHEETS = '__dshPageReaderSheets';
  const sheetMemo = (globalThis[SHEETS] ??= new WeakMap());
  const PSEUDO_SELECTOR = /:(before|after)\b/i;
  function rulesDraw(rules, depth) {
    for (const rule of rules) {
      if (rule.selectorText !== undefined && PSEUDO_SELECTOR.test(rule.selectorText)) return true;
      if (rule.cssRules && depth < 16 && rulesDraw(rule.cssRules, depth + 1)) return true;
      if (rule.styleSheet && depth < 16 && sheetDraws(rule.styleSheet, depth + 1)) return true; // @import
    }
    return false;
  }
  function sheetDraws(sheet, depth = 0) {
    let rules;
    try {
      rules = sheet.cssRules;
    } catch {
      return true;
    }
    if (!rules) return true;
    const memo = sheetMemo.get(sheet);
    if (memo?.length === rules.length) return memo.draws;
    const draws = rulesDraw(rules, depth);
    sheetMemo.set(sheet, { length: rules.length, draws });
    return draws;
  }
  const treeDraws = new Map(); // document or shadow root -> drawsPseudo
  function drawsPseudo(root) {
    let draws = treeDraws.get(root);
    if (draws === undefined) {
      draws = false;
      for (const sheets of [root.styleSheets ?? [], root.adoptedStyleSheets ?? []]) {
        for (const sheet of sheets) if (!draws && sheetDraws(sheet)) draws = true;
      }
      treeDraws.set(root, draws);
    }
    return draws;
  }
  // Elements whose pseudo-elements the browser's own style sheet draws.
  const UA_PSEUDO = new Set(['q']);
  const pseudos = new Map(); // element -> [before, after]

  // pseudo is the text an element's ::before or ::after draws.
  function pseudo(el, which) {
    const tree = el.getRootNode();
    // A slotted element takes rules of its own tree; a host's ::before and
    // ::after, of its shadow tree's too (:host::before).
    if (!UA_PSEUDO.has(el.localName) && !drawsPseudo(tree) && !(el.shadowRoot && drawsPseudo(el.shadowRoot))) return '';
    let both = pseudos.get(el);
    if (!both) {
      both = [pseudoText(el, '::before'), pseudoText(el, '::after')];
      pseudos.set(el, both);
    }
    return which === '::before' ? both[0] : both[1];
  }

  // quote is the quotation mark open-quote or close-quote draws on el.
  function quote(el, open) {
    const quotes = style(el).quotes;
    if (quotes === 'none') return '';
    const marks = [...(quotes ?? '').matchAll(/"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'/g)].map((m) => m[1] ?? m[2]);
    if (marks.length >= 2) return open ? marks[0] : marks[1];
    return open ? '\u201c' : '\u201d';
  }

  function pseudoText(el, which) {
    const content = getComputedStyle(el, which).content;
    if (!content || content === 'none' || content === 'normal') return '';
    const unescape = (t) => t.replace(/\\([0-9a-fA-F]{1,6}) ?|\\(.)/g, (_, hex, ch) => (hex ? String.fromCodePoint(parseInt(hex, 16)) : ch));
    let out = '';
    const re = /"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|(open-quote|close-quote)|attr\(\s*([^)\s]+)\s*\)/g;
    for (let m; (m = re.exec(content));) {
      if (m[3]) out += quote(el, m[3] === 'open-quote');
      else if (m[4]) out += attr(el, m[4]) ?? '';
      else out += unescape(m[1] ?? m[2]);
    }
    return out;
  }

  const inline = (s) => s.display.startsWith('inline') || s.display === 'contents';

  // textOf is the text an element contributes to a name from content
  // (accname 1.2, step 2F and on): its rendered text, an embedded
  // control's value, a child's own label, pseudo-element text.
  // textSteps counts the nodes one name's text visits, up to
  // MAX_TEXT_STEPS: a button around a whole page costs no more than that.
  let textSteps = 0;
  const MAX_TEXT_STEPS = 4096;
  function textOf(node, ctx) {
    if (ctx.depth > 64 || ++textSteps > MAX_TEXT_STEPS) return '';
    if (node.nodeType === 3) {
      const parent = node.parentElement;
      if (!parent || (parent.namespaceURI === SVG && !SVG_TEXT.has(parent.localName))) return '';
      const s = style(parent);
      if (s.visibility !== 'visible' && !ctx.referenced) return '';
      return rendered(node.data, s);
    }
    if (node.nodeType !== 1 || node === ctx.labelFor) return '';
    const el = node;
    const tag = tagOf(el);
    if (SKIP.has(tag)) return '';
    // A line break, or a chance of one, is a space in a name.
    if (tag === 'br' || tag === 'wbr') return ' ';
    const s = style(el);
    const root = ctx.depth === 0;
    if (!(root && ctx.referenced)) {
      if (s.display === 'none' || attr(el, 'aria-hidden')?.toLowerCase() === 'true' || el.hasAttribute('inert')) return '';
    }
    const sub = { ...ctx, depth: ctx.depth + 1, referenced: false };
    let text;
    if (!root) {
      const role = roleOf(el, tag);
      const label = clean(attr(el, 'aria-label'));
      // An embedded field's value, never a password field's.
      const field = tag === 'input' || tag === 'textarea' ? (el.type === 'password' ? '' : el.value) : undefined;
      if (role === 'textbox' || role === 'searchbox') text = field ?? el.textContent;
      else if (role === 'combobox' && tag === 'select') text = el.selectedOptions?.[0]?.label ?? '';
      else if (role === 'combobox' || role === 'slider' || role === 'spinbutton') text = field ?? attr(el, 'aria-valuetext') ?? attr(el, 'aria-valuenow') ?? '';
      else if (label) text = label;
      else if (tag === 'img' || (tag === 'input' && el.type === 'image')) text = attr(el, 'alt') ?? '';
      else if (tag === 'input' && ['button', 'submit', 'reset'].includes(el.type)) text = el.value || (el.type === 'submit' ? 'Submit' : el.type === 'reset' ? 'Reset' : '');
    }
    if (text === undefined) {
      if (LEAVES.has(tag) && tag !== 'select') {
        text = '';
      } else {
        let out = pseudo(el, '::before');
        for (const k of kids(el)) {
          const part = textOf(k, sub);
          if (part === '') continue;
          out += k.nodeType === 1 && !inline(style(k)) ? ` ${part} ` : part;
        }
        out += pseudo(el, '::after');
        text = out;
        if (!root && clean(text) === '') text = clean(attr(el, 'title'));
      }
    }
    if (s.visibility !== 'visible' && !ctx.referenced && !root) return '';
    return inline(s) ? text : ` ${text} `;
  }

  // nameOf is an element's accessible name.
  function nameOf(el, tag, role, focusable, editableRoot) {
    // A focusable element may be named whatever its role. Chromium names
    // a line break by its text.
    if (NO_NAME.has(role) && !focusable) return role === 'LineBreak' ? '\n' : '';
    textSteps = 0;
    const by = labelledBy(el);
    if (by) return by;
    const label = clean(attr(el, 'aria-label'));
    if (label) return label;
    const type = tag === 'input' ? el.type : '';
    if (tag === 'input' && ['button', 'submit', 'reset'].includes(type)) {
      return clean(el.value) || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : clean(attr(el, 'title')));
    }
    if (tag === 'input' && type === 'image') return clean(attr(el, 'alt')) || clean(el.value) || clean(attr(el, 'title')) || 'Submit';
    if (tag === 'input' || tag === 'textarea' || tag === 'select' || tag === 'meter' || tag === 'progress' || tag === 'output') {
      const labels = [...(el.labels ?? [])].map((l) => clean(textOf(l, { depth: 0, referenced: false, labelFor: el })));
      const joined = clean(labels.filter((l) => l).join(' '));
      if (joined) return joined;
      return clean(attr(el, 'title')) || clean(attr(el, 'placeholder')) || clean(attr(el, 'aria-placeholder'));
    }
    if (tag === 'img' || tag === 'area') return clean(attr(el, 'alt')) || clean(attr(el, 'title'));
    if (tag === 'fieldset') {
      const legend = [...el.children].find((c) => tagOf(c) === 'legend');
      if (legend) {
        const t = clean(textOf(legend, { depth: 0 }));
        if (t) return t;
      }
    }
    if (tag === 'table') {
      const caption = el.caption;
      if (caption) {
        const t = clean(textOf(caption, { depth: 0 }));
        if (t) return t;
      }
    }
    if (tag === 'figure') {
      const caption = [...el.children].find((c) => tagOf(c) === 'figcaption');
      if (caption) {
        const t = clean(textOf(caption, { depth: 0 }));
        if (t) return t;
      }
    }
    if (tag === 'svg') {
      const title = [...el.children].find((c) => c.localName === 'title');
      if (title) return clean(title.textContent);
    }
    if (tag === 'option') return clean(el.label);
    // An editing host's text is its value, never its name.
    if (FROM_CONTENT.has(role) && !editableRoot) {
      const t = clean(textOf(el, { depth: 0 }));
      if (t) return t;
    }
    return clean(attr(el, 'title'));
  }

  // descriptionOf is what Chromium gives as the description of a clickable
  // element without a name: its aria-describedby text, else its title.
  function descriptionOf(el) {
    textSteps = 0;
    const ids = attr(el, 'aria-describedby');
    if (ids) {
      const root = el.getRootNode();
      const parts = [];
      for (const id of ids.trim().split(/\s+/)) {
        const ref = root.getElementById?.(id) ?? document.getElementById(id);
        if (ref) parts.push(textOf(ref, { referenced: true, depth: 0 }));
      }
      const d = clean(parts.join(' '));
      if (d) return d;
    }
    return clean(attr(el, 'title'));
  }

  function valueOf(el, tag, role) {
    if (tag === 'input') {
      if (el.type === 'password') return undefined;
      if (['textbox', 'searchbox', 'combobox', 'spinbutton', 'slider'].includes(role)) return el.value;
      return undefined;
    }
    if (tag === 'textarea') return el.value;
    if (tag === 'select') return role === 'combobox' ? (el.selectedOptions?.[0]?.label ?? '') : undefined;
    if (role === 'textbox' || role === 'searchbox') return el.isContentEditable ? el.innerText : undefined;
    if (role === 'slider' || role === 'spinbutton' || role === 'progressbar' || role === 'scrollbar') {
      return attr(el, 'aria-valuenow') ?? attr(el, 'aria-valuetext') ?? undefined;
    }
    return undefined;
  }

  function checkedOf(el, tag, role) {
    if (tag === 'input' && (el.type === 'checkbox' || el.type === 'radio')) {
      if (el.indeterminate && el.type === 'checkbox') return 'mixed';
      return el.checked ? 'true' : 'false';
    }
    if (!CHECKABLE.has(role)) return undefined;
    const v = attr(el, 'aria-checked')?.trim().toLowerCase();
    return v === 'true' || v === 'mixed' ? v : 'false';
  }

  function disabledOf(el, tag, ariaDisabled) {
    if (ariaDisabled) return true;
    // A disabled fieldset or optgroup disables the controls in it, not
    // itself (in Chromium's tree).
    if (['button', 'input', 'select', 'textarea', 'option'].includes(tag)) return el.matches(':disabled');
    return false;
  }

  function editableOf(el, tag, editableHere) {
    if (tag === 'textarea') return 'plaintext';
    if (tag === 'input') return TEXT_INPUTS.has(el.type) ? 'plaintext' : undefined;
    if (editableHere) {
      const own = attr(el, 'contenteditable')?.toLowerCase();
      return own === 'plaintext-only' ? 'plaintext' : 'richtext';
    }
    return undefined;
  }

  // The answer.
  const nodes = [];
  const hidden = []; // clickables an aria-hidden subtree keeps out of the tree, drawn
  let bytesLeft = maxBytes - 64;
  let truncated = false;
  let full = false;
  const kept = { controls: 0, texts: 0, textBytes: 0, nodeBytes: 0 };

  // push adds a node; false when the answer's bounds stop the read.
  function push(node, el) {
    if (nodes.length >= MAX_NODES) return false;
    // At most what the node's JSON takes: 6 bytes a character of its
    // strings (a control character's escape), its keys and props besides.
    const size = 6 * (node.name.length + node.role.length + (node.value?.length ?? 0) + (node.description?.length ?? 0)) + 320;
    if (size > bytesLeft) return false;
    bytesLeft -= size;
    if (el) {
      node.el = true;
      const type = tagPrefix + nodes.length;
      el.addEventListener(type, noop);
      tags.push([el, type, noop]);
    }
    nodes.push(node);
    return true;
  }

  // keep counts what the projection keeps of a node as ax.js's Kept does;
  // false once the projection is full.
  function keep(n) {
    const blank = BLANK.test(n.name);
    if (n.role === 'StaticText') {
      if (!blank) {
        kept.texts++;
        kept.textBytes += bytes(n.name);
      }
    } else {
      const control = CONTROL_ROLES.has(n.role) || (n.props.focusable === true && !!n.props.editable);
      if (n.props.clickable === true) kept.nodeBytes += 300 + 64;
      else if (control || !blank) kept.nodeBytes += bytes(n.name) + 64 + bytes(n.value ?? '');
      if (control && n.name.length <= maxNameLength) kept.controls++;
    }
    return !(kept.controls >= budgets.controls && kept.texts >= budgets.texts &&
      kept.textBytes <= budgets.textBytes && kept.nodeBytes <= budgets.nodeBytes);
  }

  function emit(node, el) {
    if (!push(node, el)) {
      truncated = true;
      full = true;
      return false;
    }
    if (!keep(node)) {
      truncated = true;
      full = true;
    }
    return true;
  }

  let index = 0;
  const text = (name, parent) => {
    const node = { axId: `p${index++}`, role: 'StaticText', name, ignored: false, props: {} };
    if (parent) node.parentAxId = parent;
    return node;
  };

  // grabItems: the element children of el, a holder of grab listeners,
  // that are its items (shaped alike by tag and class, or list items).
  function grabItems(el) {
    const groups = new Map();
    for (const c of el.children) {
      const shape = `${c.tagName.toUpperCase()} ${attr(c, 'class') ?? ''}`;
      if (!groups.has(shape)) groups.set(shape, []);
      groups.get(shape).push(c);
    }
    const items = new Set();
    for (const group of groups.values()) {
      for (const c of group) if (group.length > 1 || tagOf(c) === 'li') items.add(c);
    }
    return items;
  }
  const itemsOf = new Map(); // holder -> its items

  // marked: the element is clickable by the page's own doing (ax.js
  // clickables, from the DOM instead of a snapshot).
  function marked(el, tag, s, editableHere) {
    const tabindex = attr(el, 'tabindex');
    if (tabindex !== null && Number.parseInt(tabindex, 10) >= 0) return true;
    if (attr(el, 'draggable') === 'true') return true;
    let holder = false;
    if (listens(el, GRAB) && tag !== 'html' && tag !== 'body') {
      if (!itemsOf.has(el)) itemsOf.set(el, grabItems(el));
      holder = itemsOf.get(el).size > 0;
    }
    const parent = el.parentNode;
    if (parent?.nodeType === 1 && itemsOf.get(parent)?.has(el)) return true;
    // Chromium's isClickable: a listener of a click, a link, an enabled
    // input, a summary (and an editable element, below); not a label's
    // own activation.
    const clickable = listens(el, CLICK) || (tag === 'a' && el.hasAttribute('href')) || (tag === 'input' && !el.disabled) || tag === 'summary';
    if (clickable && tag !== 'label') return true;
    if (listens(el, PRESS) && !holder) return true;
    if (POINTERS.has(s.cursor)) {
      // The root of a cursor area: its parent (in the DOM, as the
      // snapshot has it) draws no box or another cursor.
      if (parent?.nodeType !== 1) return true;
      const ps = style(parent);
      if (ps.display === 'contents' || !POINTERS.has(ps.cursor)) return true;
    }
    // Inside an editable element every element is clickable to Chromium,
    // but one without a role of its own is not in its tree for that.
    return editableHere && tag !== 'label' ? 'editable' : false;
  }

  // walk emits node's subtree. parent is the axId of the nearest emitted
  // ancestor; ariaHidden says an aria-hidden="true" subtree keeps it out of
  // the tree; disabled an ancestor's aria-disabled.
  function walk(node, parent, ariaHidden, disabled, depth, quiet = false, editing = false, inModal = !modal) {
    if (full) return;
    if (performance.now() > deadline) {
      truncated = full = true;
      return;
    }
    if (depth > MAX_DEPTH) {
      truncated = true;
      return;
    }
    if (node.nodeType === 3) {
      if (ariaHidden || quiet || !inModal) return;
      const el = node.parentElement;
      if (!el || (el.namespaceURI === SVG && !SVG_TEXT.has(el.localName))) return;
      const s = style(el);
      if (s.visibility !== 'visible') return;
      const t = rendered(node.data, s);
      if (BLANK.test(t)) return;
      emit(text(t, parent));
      return;
    }
    if (node.nodeType !== 1) {
      if (node.nodeType === 9 || node.nodeType === 11) for (const k of kids(node)) walk(k, parent, ariaHidden, disabled, depth + 1, quiet, editing, inModal);
      return;
    }
    const el = node;
    last = el;
    const tag = tagOf(el);
    if (SKIP.has(tag)) return;
    const s = style(el);
    if (s.display === 'none' || el.hasAttribute('inert')) return;
    // A modal dialog leaves the rest of the page inert.
    const inModalHere = inModal || el === modal;
    if (!inModalHere && !modalPath.has(el)) return;
    const hiddenHere = ariaHidden || attr(el, 'aria-hidden')?.trim().toLowerCase() === 'true';
    const disabledHere = disabled || attr(el, 'aria-disabled')?.trim().toLowerCase() === 'true';
    // isContentEditable asks the style: only asked in an editable subtree,
    // or of an element that says it is one (a page whose CSS alone makes
    // an element editable is not seen so).
    const editableHere = (editing || designMode || el.hasAttribute('contenteditable')) && el.isContentEditable;
    // The root elements, and those a modal dialog is inside (inert, but
    // for the dialog), are no nodes of Chromium's tree; but for a body that
    // is an editing host (an editor's frame: TinyMCE's), which is.
    const editorBody = tag === 'body' && editableHere && el.hasAttribute('contenteditable');
    const root = tag === 'html' || (tag === 'body' && !editorBody) || !inModalHere;
    const visible = s.visibility === 'visible';
    let own = parent;
    if (!root) {
      const mark = visible || hiddenHere ? marked(el, tag, s, editableHere) : false;
      if (hiddenHere) {
        if (mark) {
          const r = el.getBoundingClientRect();
          if (r.width > 0 && r.height > 0) {
            const role = clean(attr(el, 'role')).split(' ')[0].toLowerCase() || 'generic';
            const name = clean(attr(el, 'aria-label')) || clean(attr(el, 'title'));
            if (name.length <= maxNameLength) hidden.push([el, role, name]);
          }
        }
      } else if (visible) {
        const role = roleOf(el, tag);
        if (role !== 'none' && role !== 'presentation') {
          const editable = editableOf(el, tag, editableHere);
          const editableRoot = editable !== undefined && (tag === 'input' || tag === 'textarea' || !editing);
          const control = CONTROL_ROLES.has(role) || editableRoot;
          const region = REGION_ROLES.has(role);
          const clickable = mark === 'editable' ? role !== 'generic' || editableRoot : mark;
          if (control || region || clickable) {
            const disabledNow = disabledOf(el, tag, disabledHere);
            const focusable = !disabledNow && (el.tabIndex >= 0 || el.hasAttribute('tabindex') || editableRoot);
            const name = nameOf(el, tag, role, focusable, editableRoot);
            if (control || clickable || name !== '') {
              const n = { axId: `p${index++}`, role, name, ignored: false, props: {} };
              if (parent) n.parentAxId = parent;
              // Chromium gives an editable element's text as its value,
              // whatever its role.
              const value = valueOf(el, tag, role) ?? (editableRoot && el.isContentEditable ? el.innerText : undefined);
              if (value !== undefined && value !== '') n.value = value;
              const props = n.props;
              if (disabledNow) props.disabled = true;
              if (focusable) props.focusable = true;
              if (editable !== undefined) props.editable = editable;
              const checked = checkedOf(el, tag, role);
              if (checked !== undefined) props.checked = checked;
              const expanded = attr(el, 'aria-expanded');
              if (expanded === 'true' || expanded === 'false') props.expanded = expanded === 'true';
              if (el.required || attr(el, 'aria-required') === 'true') props.required = true;
              if (clickable) {
                props.clickable = true;
                if (name === '') {
                  const d = descriptionOf(el);
                  if (d) n.description = d.slice(0, maxNameLength);
                }
              }
              if (!emit(n, el)) return;
              own = n.axId;
              if (full) return;
              if (tag === 'input' || tag === 'textarea') {
                // Chromium shows a field's text as a StaticText inside it
                // (a line each); a password field's is its value, never
                // shown. A button's is its label.
                if (tag === 'textarea' || (TEXT_INPUTS.has(el.type) && el.type !== 'password')) {
                  for (const line of (value ?? '').split('\n')) if (!BLANK.test(line) && !full) emit(text(line, own));
                } else if (['button', 'submit', 'reset', 'image'].includes(el.type) && name !== '') {
                  emit(text(name, own));
                }
                return;
              }
            }
          }
        }
      }
    }
    if (tag === 'select') {
      if (hiddenHere || !visible) return;
      const option = (o, parentId) => {
        const props = {};
        if (o.matches(':disabled')) props.disabled = true;
        else props.focusable = true;
        const n = { axId: `p${index++}`, role: 'option', name: clean(o.label), ignored: false, props };
        if (parentId) n.parentAxId = parentId;
        emit(n, o);
      };
      for (const c of el.children) {
        if (full) return;
        if (tagOf(c) === 'option') option(c, own);
        if (tagOf(c) !== 'optgroup') continue;
        // An option group is a group named by its label (never disabled
        // itself in Chromium's tree).
        const g = { axId: `p${index++}`, role: 'group', name: clean(attr(c, 'label')), ignored: false, props: {} };
        if (own) g.parentAxId = own;
        emit(g, c);
        for (const o of c.children) if (tagOf(o) === 'option' && !full) option(o, g.axId);
      }
      return;
    }
    if (LEAVES.has(tag)) return;
    // Content that is skipped (content-visibility: hidden, a closed
    // details element's, hidden="until-found") is not in Chromium's tree;
    // of a closed details element only its summary is.
    if (s.contentVisibility === 'hidden') return;
    const closedDetails = tag === 'details' && !el.open;
    const before = !hiddenHere && visible && inModalHere ? pseudo(el, '::before') : '';
    if (before && !quiet && !BLANK.test(before)) emit(text(transform(before, s.textTransform), own));
    // Chromium leaves out the text of a label that names a checkbox or a
    // radio button: the control's name says it.
    const labelled = tag === 'label' ? el.control : null;
    const quietHere = quiet || (labelled?.localName === 'input' && (labelled.type === 'checkbox' || labelled.type === 'radio'));
    const summary = closedDetails ? [...el.children].find((c) => tagOf(c) === 'summary') : undefined;
    for (const k of kids(el)) {
      if ((closedDetails && k !== summary) || owned.has(k)) continue; // an owned element is its owner's child
      walk(k, own, hiddenHere, disabledHere, depth + 1, quietHere, editableHere, inModalHere);
      if (full) return;
    }
    const after = !hiddenHere && visible && inModalHere ? pseudo(el, '::after') : '';
    if (after && !quiet && !BLANK.test(after)) emit(text(transform(after, s.textTransform), own));
    for (const o of ownedBy.get(el) ?? []) {
      walk(o, own, hiddenHere, disabledHere, depth + 1, quietHere, editableHere, inModalHere);
      if (full) return;
    }
  }

  const designMode = document.designMode === 'on';
  // The modal dialog (showModal) and the elements it is inside, in the
  // flat tree.
  let modal;
  try {
    modal = document.querySelector('dialog:modal') ?? undefined;
  } catch {
    modal = undefined; // a browser without :modal
  }
  // aria-owns: the owned elements come after their owner's children (the
  // first owner of an element, an owner not inside it).
  const owned = new Set();
  const ownedBy = new Map();
  for (const owner of document.querySelectorAll('[aria-owns]')) {
    const list = [];
    for (const id of attr(owner, 'aria-owns').trim().split(/\s+/)) {
      const o = id ? owner.getRootNode().getElementById?.(id) : undefined;
      if (!o || owned.has(o) || o === owner || o.contains(owner)) continue;
      owned.add(o);
      list.push(o);
    }
    if (list.length) ownedBy.set(owner, list);
  }
  const modalPath = new Set();
  for (let n = modal, steps = 0; n && steps < MAX_DEPTH; steps++) {
    n = n.assignedSlot ?? n.parentNode;
    if (n?.nodeType === 11) n = n.host;
    if (n?.nodeType === 1) modalPath.add(n);
  }
  walk(document, undefined, false, false, 0);
  for (const [el, role, name] of hidden) {
    if (!push({ axId: `hidden-${index++}`, role, name, ignored: false, props: { clickable: true } }, el)) {
      truncated = true;
      break;
    }
  }

  // frameOwners: the frame owner elements of the document, open shadow
  // trees included.
  let frameOwners = 0;
  const count = (root) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let el = walker.nextNode(); el; el = walker.nextNode()) {
      if (OWNERS.has(tagOf(el))) frameOwners++;
      if (el.shadowRoot) count(el.shadowRoot);
    }
  };
  count(document);

  // incomplete: the driver passed the first of more listened elements,
  // and the walk went past the last one passed (or to the end): what it
  // read after it may be marked wrongly.
  const lastPassed = listenedElements.at(-1);
  const incomplete = opts?.listenedMore === true && lastPassed !== undefined &&
    (!truncated || (last !== undefined && (lastPassed.compareDocumentPosition(last) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0));
  const foreign = [];
  listenedElements.forEach((el, k) => el && el.ownerDocument !== document && foreign.push(k));
  // url: the document's, as the page's location has it now (a kept
  // world's read names its document by it: pageread.js proof).
  return JSON.stringify({ nodes, truncated, frameOwners, incomplete, url: location.href, foreign });
}

// removeTags removes the listeners the last pageReader call of this world
// tagged elements with.
export function removeTags() {
  const TAGS = '__dshPageReaderTags';
  for (const [el, type, fn] of globalThis[TAGS] ?? []) el.removeEventListener(type, fn);
  globalThis[TAGS] = [];
}
