"""A small news site of real-looking article pages for the main-content tests (parse-boilerplate): each article sits
among a cookie banner, a navigation menu, ads, a related-links box, a newsletter box, comments and a footer, as news
sites and blogs lay them out (semantic <article>/<nav>/<aside> on some, plain <div> soup on others). Every article
knows its own paragraphs, the boilerplate phrases around it, and its title, author and date, so a test can check
what an extractor kept and what it left out. Serve it with tests/pagesite.PageSite(site_pages())."""

from __future__ import annotations

from dataclasses import dataclass

# words of the chrome around every article: none of them is in an article's text
MENU = ["Worldwide", "Politics", "Business", "Technology", "Science", "Culture", "Weather", "Podcasts", "Crosswords"]
BOILERPLATE = (
    "We use cookies to improve your experience. Accept all cookies or manage your preferences.",
    "Subscribe to the Morning Briefing newsletter, delivered before breakfast.",
    "Advertisement: Quickloan Finance approves your credit in minutes, apply today.",
    "Sponsored content: Holiday deals on Zanzibar resorts, book now and save.",
    "Copyright 2026 Daily Lantern Media Group. All rights reserved. Terms of use. Privacy policy.",
    "Most read this week",
)


@dataclass(frozen=True)
class Article:
    """One article page: where it is, what it says and who wrote it when."""

    path: str
    title: str
    author: str
    date: str  # YYYY-MM-DD
    paragraphs: tuple[str, ...]
    layout: str  # "semantic" (article/nav/aside/footer) or "divs" (div soup with classes)

    @property
    def text(self) -> str:
        return " ".join(self.paragraphs)


ARTICLES = (
    Article(
        "/news/2026/harbour-lighthouse.html", "Harbour lighthouse restored after forty years", "Marta Quillfeather",
        "2026-11-03",
        ("The old harbour lighthouse at Kelvingate shone again on Tuesday night, forty years after its lamp was "
         "switched off and the tower left to the gulls.",
         "Volunteers from the Kelvingate Maritime Trust spent three winters scraping rust from the iron gallery, "
         "replacing the cracked lantern glass and rebuilding the spiral staircase step by step.",
         "The restored lens, a second-order Fresnel lens made in 1897, was cleaned by hand with distilled water and "
         "vinegar, because modern solvents would cloud the brass frame that holds its prisms.",
         "Harbourmaster Elspeth Varnavides said the light would not guide ships again, since satellite navigation "
         "made it redundant long ago, but that fishermen had asked for it to burn on winter evenings anyway.",
         "The trust now plans guided climbs to the lantern room on Saturdays from April, with tickets sold at the "
         "harbour office and the proceeds set aside for repainting the tower every seven years."),
        "semantic"),
    Article(
        "/news/2026/orchard-frost.html", "Late frost threatens the valley's apple orchards", "Tobias Grennwald",
        "2026-10-21",
        ("Growers in the Ashcombe valley lit smudge pots between the rows on Sunday night as temperatures fell to "
         "minus four degrees, a week after the apple blossom had opened.",
         "A frost at full bloom can kill the flower's pistil within an hour, leaving trees that look healthy but "
         "carry almost no fruit by autumn, explained pomologist Ingrid Saltmarsh of the regional research station.",
         "Several farms ran overhead sprinklers through the night: the water freezes on the blossom and releases "
         "enough heat as it turns to ice to keep the flower itself just above the killing point.",
         "The cooperative expects to know by the end of the month how much of the crop survived, once the set "
         "fruitlets can be counted on sample branches across the valley's forty orchards."),
        "divs"),
    Article(
        "/culture/2026/glass-organ.html", "A glass organ plays its first concert", "Rosalind Okonkwo-Byre",
        "2026-09-14",
        ("An organ whose pipes are made of hand-blown borosilicate glass gave its first public concert on Friday in "
         "the converted grain store at Thornwick.",
         "Its builder, the glassblower Anselm Petrakova, spent six years learning how wall thickness changes the "
         "voice of a pipe, discarding nearly two hundred pipes that cracked while cooling or sounded dull.",
         "The audience heard a programme of Buxtehude and a new commission, Refractions, written for the instrument "
         "by the composer Wilhelmina Sorrentine, whose slow chords made the whole rank of pipes shimmer.",
         "Petrakova says the glass pipes stay in tune through the seasons better than metal ones, because the glass "
         "barely expands when the unheated hall warms up in summer."),
        "semantic"),
    Article(
        "/science/2026/moss-batteries.html", "Researchers grow a battery from bog moss", "Dr. Caspian Wetherell",
        "2026-08-30",
        ("A team at the Fenmoor Institute has built a small battery whose electrodes are made of carbonised "
         "sphagnum moss, the plant that forms peat bogs across the northern hemisphere.",
         "Heated without oxygen, the moss keeps its honeycomb of hollow cells, which gives the carbon an enormous "
         "surface for ions to settle on, said the project's lead chemist, Philippa Drummonde-Achebe.",
         "Their prototype cell held its charge through two thousand cycles in the laboratory, though it stores only "
         "a third of the energy of a lithium cell of the same weight.",
         "The researchers stress that wild bogs must not be harvested, since they store vast amounts of carbon; the "
         "moss for the experiments was farmed on flooded former pasture."),
        "divs"),
)


def _nav() -> str:
    items = "".join(f'<li><a href="/section/{w.lower()}.html">{w}</a></li>' for w in MENU)
    return f'<nav class="main-menu"><ul>{items}</ul></nav>'


def _related(current: Article) -> str:
    links = "".join(f'<li><a href="{a.path}">{a.title}</a></li>' for a in ARTICLES if a is not current)
    return f'<h3>{BOILERPLATE[5]}</h3><ul class="related">{links}</ul>'


def _comments() -> str:
    return ('<div class="comments"><h4>3 comments</h4>'
            '<div class="comment"><b>reader42</b> <span>First! Great pictures, shame about the paywall.</span></div>'
            '<div class="comment"><b>grumpy_gus</b> <span>Log in to reply. Report abuse.</span></div>'
            '<a href="/login.html">Sign in to comment</a></div>')


def article_page(a: Article) -> str:
    """The HTML of one article page in its layout."""
    paras = [f"<p>{p}</p>" for p in a.paragraphs]
    ad = f'<div class="ad-slot"><span class="ad-label">{BOILERPLATE[2]}</span><a href="/ads/click?id=7">Apply</a></div>'
    head = (f"<title>{a.title} | The Daily Lantern</title>"
            f'<meta name="author" content="{a.author}">'
            f'<meta property="og:title" content="{a.title}">'
            f'<meta property="article:published_time" content="{a.date}T08:00:00Z">'
            '<link rel="stylesheet" href="/static/site.css"><script src="/static/ads.js"></script>')
    banner = (f'<div id="cookie-banner" class="cookie-consent"><p>{BOILERPLATE[0]}</p>'
              '<button>Accept all</button><button>Settings</button></div>')
    newsletter = f'<div class="newsletter-box"><p>{BOILERPLATE[1]}</p><form action="/subscribe"><input name="email">' \
                 '<button>Sign up</button></form></div>'
    sponsored = f'<div class="sponsored"><p>{BOILERPLATE[3]}</p><a href="/ads/click?id=9">More deals</a></div>'
    footer_links = "".join(f'<a href="/{w}.html">{w}</a> ' for w in ("about", "contact", "careers", "advertise"))
    if a.layout == "semantic":
        body = (f'{banner}<header><a href="/" class="logo">The Daily Lantern</a>{_nav()}</header>'
                f'<main><article><h1>{a.title}</h1>'
                f'<p class="byline">By <span class="author">{a.author}</span> · '
                f'<time datetime="{a.date}">{a.date}</time></p>'
                f'{"".join(paras[:2])}{ad}{"".join(paras[2:])}</article>'
                f'<aside class="sidebar">{_related(a)}{newsletter}{sponsored}</aside>{_comments()}</main>'
                f'<footer><p>{BOILERPLATE[4]}</p><p>{footer_links}</p></footer>')
    else:
        body = (f'{banner}<div id="top"><div class="logo"><a href="/">The Daily Lantern</a></div>'
                f'<div id="menu">{_nav().replace("<nav", "<div").replace("</nav>", "</div>")}</div></div>'
                f'<div id="wrapper"><div class="left-col"><div class="post">'
                f'<h1 class="post-title">{a.title}</h1>'
                f'<div class="post-meta">Posted by <a href="/authors/x.html">{a.author}</a> on {a.date}</div>'
                f'<div class="post-body">{"".join(paras[:1])}{ad}{"".join(paras[1:])}</div></div>{_comments()}</div>'
                f'<div class="right-col">{_related(a)}{newsletter}{sponsored}</div></div>'
                f'<div id="bottom"><p>{BOILERPLATE[4]}</p><p>{footer_links}</p></div>')
    return f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">{head}</head><body>{body}</body></html>"


def front_page() -> str:
    """The home page: menu and a list of teasers linking to every article."""
    teasers = "".join(f'<div class="teaser"><h2><a href="{a.path}">{a.title}</a></h2><p>{a.paragraphs[0][:80]}...'
                      "</p></div>" for a in ARTICLES)
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>The Daily Lantern</title></head><body>"
            f"{_nav()}<main>{teasers}</main><footer><p>{BOILERPLATE[4]}</p></footer></body></html>")


def site_pages() -> dict[str, str]:
    """path -> HTML of the whole site (the front page and the articles)."""
    return {"/": front_page(), **{a.path: article_page(a) for a in ARTICLES}}
