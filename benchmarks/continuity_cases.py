"""Cross-session continuity scenarios for the long-term memory benchmark.

Each case is one user. In "session 1" the user sends a few chat messages (the
assistant's replies are not part of the data); in "session 2", a new
conversation on a new thread, the same user asks a single question that
can only be answered well if the memory layer brings back what was said in
session 1. All users share one tenant.

The benchmark checks the prompt the memory layer assembled for the session-2
question:

* ``expect``: case-insensitive substrings that must appear in that prompt, one per
  session-1 statement the question depends on. None of them occurs in the
  question itself.
* ``absent``: for corrections, the old value that was superseded. It must not
  appear in the prompt once the question text has been removed.
* ``private``: values only this user stated, used to detect leaks into other
  users' prompts. ``None`` means "same as ``expect``"; ``[]`` is used when the
  expected values are generic words that other users could legitimately produce.
  Every private value is unique to its case across the whole file.

The cases were written by category from how people actually phrase things in
chat (casual and formal registers, lowercase, the odd typo, hedges and fillers
such as "btw", "fwiw", "oh and", statements mixed with questions, several
domains) and independently of the extractor's implementation, so they test the
behaviour rather than the code. Categories:

* ``correction``: a fact or preference stated and later corrected in session 1,
  half with an explicit marker ("actually", "scratch that", "switched to",
  "update:" ...) and half without one (a plain new value, or a change
  described indirectly, sometimes without restating the old value).
* ``organisation``: first-person plural and company facts (stack, rota, offices).
* ``instruction``: standing instructions about how the assistant should answer.
* ``relation``: named people, relatives, colleagues and pets, and their attributes.
* ``identifier``: emails, phone numbers, ports, versions, dates, amounts, ids.
* ``buried``: the statement sits inside a longer message about something else.
* ``several``: several statements in one message; the question needs two or more.
* ``turn-log``: events, plans, opinions and problems rather than neat attributes;
  the question refers to them without repeating the distinctive words.

About a third of the cases are corrections, counting the corrections inside the
organisation, instruction, relation and identifier categories.
"""

CASES: tuple[dict[str, object], ...] = (
    # ------------------------------------------------------------------
    # correction: explicit marker
    # ------------------------------------------------------------------
    {
        "name": "corr-marked-tea",
        "category": "correction",
        "session1": [
            "My favourite tea is green tea.",
            "Actually I've gone off green tea, it's oolong these days.",
        ],
        "question": "Which tea should I order at the cafe?",
        "expect": ["oolong"],
        "absent": ["green tea"],
        "private": None,
    },
    {
        "name": "corr-actually-city",
        "category": "correction",
        "session1": [
            "hey, quick one - I'm based in Leeds, been here since uni",
            "actually no wait, I moved to Bristol last month, keep forgetting to tell people lol",
        ],
        "question": "Any decent climbing gyms near me?",
        "expect": ["Bristol"],
        "absent": ["Leeds"],
        "private": None,
    },
    {
        "name": "corr-correction-employer",
        "category": "correction",
        "session1": [
            "I work at Deloitte as an audit senior.",
            "Correction: I left Deloitte in June. I'm at Grant Thornton now, same kind of role.",
        ],
        "question": "Can you draft a LinkedIn headline for me?",
        "expect": ["Grant Thornton"],
        "absent": ["Deloitte"],
        "private": None,
    },
    {
        "name": "corr-scratch-that-deadline",
        "category": "correction",
        "session1": [
            "The grant application for the Wellcome fund is due on 12 May.",
            "scratch that, they extended the deadline to 26 May",
        ],
        "question": "How many weeks have I got left to finish the grant application?",
        "expect": ["26 May"],
        "absent": ["12 May"],
        "private": None,
    },
    {
        "name": "corr-not-anymore-reply-language",
        "category": "correction",
        "session1": [
            "Please answer me in German from now on, I'm practising for a B2 exam.",
            "ok not German anymore, the exam's done. I'd rather you reply in Portuguese, "
            "my partner's family is from Recife.",
        ],
        "question": "How do I make a good mushroom risotto?",
        "expect": ["Portuguese"],
        "absent": ["German"],
        "private": [],
    },
    {
        "name": "corr-switched-editor",
        "category": "correction",
        "session1": [
            "i code mostly in vim, have done for like 10 years",
            "switched to helix a few weeks ago and honestly not looking back",
        ],
        "question": "What's a good setup for Rust development in my editor?",
        "expect": ["helix"],
        "absent": ["vim"],
        "private": None,
    },
    {
        "name": "corr-these-days-drink",
        "category": "correction",
        "session1": [
            "I drink way too much espresso, like five a day.",
            "These days it's mostly rooibos, my doctor told me to cut the caffeine.",
        ],
        "question": "Suggest a cosy afternoon drink I could make at home.",
        "expect": ["rooibos"],
        "absent": ["espresso"],
        "private": None,
    },
    {
        "name": "corr-no-longer-job-title",
        "category": "correction",
        "session1": [
            "I'm a junior data analyst at a freight logistics company.",
            "Big news: I'm no longer an analyst, they promoted me to analytics team lead "
            "last week!",
        ],
        "question": "Help me write a short bio for the company intranet.",
        "expect": ["team lead"],
        "absent": ["junior"],
        "private": [],
    },
    {
        "name": "corr-i-meant-car",
        "category": "correction",
        "session1": [
            "My car's a 2016 Toyota Corolla, mostly city driving.",
            "Sorry, I meant a Prius, not a Corolla. The Corolla was my dad's.",
        ],
        "question": "How often should I get my car serviced?",
        "expect": ["Prius"],
        "absent": ["Corolla"],
        "private": None,
    },
    {
        "name": "corr-update-phone",
        "category": "correction",
        "session1": [
            "My phone's an iPhone 12 mini.",
            "update: dropped it in the canal on saturday, replaced it with a Galaxy S23",
        ],
        "question": "How do I turn on battery saver on my phone?",
        "expect": ["Galaxy S23"],
        "absent": ["iPhone 12"],
        "private": None,
    },
    {
        "name": "corr-turns-out-allergy",
        "category": "correction",
        "session1": [
            "I'm allergic to penicillin I think, had a rash as a kid.",
            "Turns out it's sulfa drugs, not penicillin - the allergy clinic finally tested me.",
        ],
        "question": "My GP wants to prescribe antibiotics for a chest infection, what should I "
        "remind her about?",
        "expect": ["sulfa"],
        "absent": ["penicillin"],
        "private": None,
    },
    {
        "name": "corr-actually-band",
        "category": "correction",
        "session1": [
            "my favourite band is Radiohead, always has been",
            "ok actually if I'm honest it's Khruangbin these days, had them on repeat all year",
        ],
        "question": "Recommend me some albums for a long drive this weekend.",
        "expect": ["Khruangbin"],
        "absent": ["Radiohead"],
        "private": None,
    },
    {
        "name": "corr-actually-distance-units",
        "category": "correction",
        "session1": [
            "When you talk distances, use miles please.",
            "Actually make that kilometres - we moved to Ottawa and everything here is metric.",
        ],
        "question": "How far is a half marathon?",
        "expect": ["kilometres"],
        "absent": ["miles"],
        "private": [],
    },
    # ------------------------------------------------------------------
    # correction: no marker (plain new value, or change described indirectly)
    # ------------------------------------------------------------------
    {
        "name": "corr-plain-manager",
        "category": "correction",
        "session1": [
            "My manager is Priya, she's been great about flexible hours.",
            "Had a tough 1:1 with my manager Tomasz today, he wants the migration plan by Friday.",
        ],
        "question": "Who do I need to send my holiday request to for sign-off?",
        "expect": ["Tomasz"],
        "absent": ["Priya"],
        "private": None,
    },
    {
        "name": "corr-indirect-office",
        "category": "correction",
        "session1": [
            "I work in the Denver office, mostly on the payments team.",
            "Small update: my team moved me to the Austin office.",
        ],
        "question": "What's the weather usually like in winter where I work?",
        "expect": ["Austin"],
        "absent": ["Denver"],
        "private": None,
    },
    {
        "name": "corr-plain-thesis-deadline",
        "category": "correction",
        "session1": [
            "My thesis draft is due to my supervisor on 20 February.",
            "My supervisor wants the thesis draft by 6 February.",
        ],
        "question": "Make me a writing schedule so I hit my thesis draft deadline.",
        "expect": ["6 February"],
        "absent": ["20 February"],
        "private": None,
    },
    {
        "name": "corr-plain-favourite-food",
        "category": "correction",
        "session1": [
            "My favourite food is lasagne, no contest.",
            "honestly my favourite food is ramen",
        ],
        "question": "What should I cook for my own birthday dinner? Something I love.",
        "expect": ["ramen"],
        "absent": ["lasagne"],
        "private": None,
    },
    {
        "name": "corr-plain-todo-app",
        "category": "correction",
        "session1": [
            "I keep all my tasks in Trello.",
            "i keep my to-dos in todoist, the natural language dates are great",
        ],
        "question": "How do I set up a task that repeats every other Monday?",
        "expect": ["Todoist"],
        "absent": ["Trello"],
        "private": None,
    },
    {
        "name": "corr-indirect-diet",
        "category": "correction",
        "session1": [
            "I'm vegetarian, have been for about eight years.",
            "Started eating fish again last month, my doctor wants me getting more omega-3.",
        ],
        "question": "Plan me a high-protein dinner menu for the week.",
        "expect": ["fish"],
        "absent": ["vegetarian"],
        "private": [],
    },
    {
        "name": "corr-plain-bank",
        "category": "correction",
        "session1": [
            "My main bank account is with Monzo.",
            "fyi my main current account is with Starling.",
        ],
        "question": "How do I set up a savings pot in my banking app?",
        "expect": ["Starling"],
        "absent": ["Monzo"],
        "private": None,
    },
    {
        "name": "corr-plain-flight-time",
        "category": "correction",
        "session1": [
            "My flight to Lisbon leaves at 7:40am on Friday.",
            "Airline just emailed: departure is 11:15.",
        ],
        "question": "What time should I leave for the airport on Friday?",
        "expect": ["11:15"],
        "absent": ["7:40"],
        "private": None,
    },
    {
        "name": "corr-plain-python-version",
        "category": "correction",
        "session1": [
            "My side project targets Python 3.9.",
            "my side project targets python 3.12, bumped the CI matrix last night",
        ],
        "question": "Can I use match statements and the new generic syntax in my side project?",
        "expect": ["3.12"],
        "absent": ["3.9"],
        "private": None,
    },
    {
        "name": "corr-plain-answer-length",
        "category": "correction",
        "session1": [
            "Keep your answers short please, two or three sentences max.",
            "I prefer long, detailed answers with worked examples.",
        ],
        "question": "Explain how index funds work.",
        "expect": ["worked examples"],
        "absent": ["three sentences"],
        "private": [],
    },
    {
        "name": "corr-plain-code-language",
        "category": "correction",
        "session1": [
            "Give me code examples in TypeScript.",
            "For code examples I want Kotlin, it's what I write all day at the new job.",
        ],
        "question": "Show me how to debounce a function.",
        "expect": ["Kotlin"],
        "absent": ["TypeScript"],
        "private": None,
    },
    {
        "name": "corr-indirect-marathon",
        "category": "correction",
        "session1": [
            "I'm training for the Berlin Marathon in September.",
            "Didn't get a place in the ballot, so I've entered Chicago in October.",
        ],
        "question": "How should I structure my long runs this month for my race?",
        "expect": ["Chicago"],
        "absent": ["Berlin"],
        "private": None,
    },
    {
        "name": "corr-indirect-house",
        "category": "correction",
        "session1": [
            "I'm renting a one-bed flat in Hackney.",
            "We finally got the keys to our house in Walthamstow!!",
        ],
        "question": "Which council do I need to register with for council tax?",
        "expect": ["Walthamstow"],
        "absent": ["Hackney"],
        "private": None,
    },
    # ------------------------------------------------------------------
    # organisation
    # ------------------------------------------------------------------
    {
        "name": "org-standup",
        "category": "organisation",
        "session1": ["our standup is at 9:30 every weekday, 15 mins on Teams"],
        "question": "Can I book a dentist appointment at 9 tomorrow without missing anything "
        "at work?",
        "expect": ["9:30"],
        "absent": [],
        "private": [],
    },
    {
        "name": "org-azure",
        "category": "organisation",
        "session1": [
            "We host everything on Azure - AKS for the services plus a couple of App Services "
            "for the legacy bits.",
        ],
        "question": "What's the simplest way for us to add a managed Redis cache?",
        "expect": ["Azure"],
        "absent": [],
        "private": None,
    },
    {
        "name": "org-fiscal-year",
        "category": "organisation",
        "session1": ["fwiw the company's fiscal year starts on 1 July, so Q1 is July to September"],
        "question": "When does our Q3 end this year?",
        "expect": ["1 July"],
        "absent": [],
        "private": [],
    },
    {
        "name": "org-team-size",
        "category": "organisation",
        "session1": ["There are 14 engineers on our platform team, plus two PMs."],
        "question": "How many pizzas should I order for the platform team's hackathon lunch?",
        "expect": ["14"],
        "absent": [],
        "private": [],
    },
    {
        "name": "org-stack",
        "category": "organisation",
        "session1": [
            "We're a Django + HTMX shop, Postgres underneath, everything server-rendered.",
        ],
        "question": "What's the best way for us to add live notifications to our web app?",
        "expect": ["Django", "HTMX"],
        "absent": [],
        "private": None,
    },
    {
        "name": "org-clients",
        "category": "organisation",
        "session1": ["Our clients are mostly independent dental practices across the Midlands."],
        "question": "Give me five ideas for our next customer newsletter.",
        "expect": ["dental practices"],
        "absent": [],
        "private": None,
    },
    {
        "name": "org-oncall",
        "category": "organisation",
        "session1": [
            "On-call rota rotates every Monday at 10:00 and handover notes go in #ops-handover "
            "on Slack.",
        ],
        "question": "Where should I post my notes when my on-call week finishes?",
        "expect": ["#ops-handover"],
        "absent": [],
        "private": None,
    },
    {
        "name": "org-offices",
        "category": "organisation",
        "session1": [
            "The company's HQ is in Rotterdam but we've got a smaller engineering office "
            "in Tallinn.",
        ],
        "question": "Which cities should I plan to visit for my onboarding tour?",
        "expect": ["Rotterdam", "Tallinn"],
        "absent": [],
        "private": None,
    },
    {
        "name": "org-corr-ci",
        "category": "organisation",
        "session1": [
            "We use Jenkins for CI, self-hosted.",
            "Update from the infra sync: we've migrated all our pipelines to GitHub Actions.",
        ],
        "question": "How do I cache dependencies in our CI pipeline?",
        "expect": ["GitHub Actions"],
        "absent": ["Jenkins"],
        "private": None,
    },
    {
        "name": "org-corr-release-day",
        "category": "organisation",
        "session1": [
            "Our release train ships every second Thursday.",
            "Leadership changed the cadence, our releases go out every Tuesday.",
        ],
        "question": "If I merge my feature today, when will customers see it?",
        "expect": ["Tuesday"],
        "absent": ["Thursday"],
        "private": [],
    },
    {
        "name": "org-corr-headcount",
        "category": "organisation",
        "session1": [
            "We're about 40 people at the company right now.",
            "we just closed the Brightwave acquisition, so we're roughly 65 people",
        ],
        "question": "Roughly how many seats should we buy for the new HR platform?",
        "expect": ["65"],
        "absent": ["40 people"],
        "private": [],
    },
    {
        "name": "org-corr-annual-leave",
        "category": "organisation",
        "session1": [
            "Our company gives 25 days of annual leave.",
            "HR sent round the new handbook - from January it's 28 days.",
        ],
        "question": "How much holiday will I get next year?",
        "expect": ["28 days"],
        "absent": ["25 days"],
        "private": [],
    },
    # ------------------------------------------------------------------
    # instruction
    # ------------------------------------------------------------------
    {
        "name": "instr-haiku",
        "category": "instruction",
        "session1": [
            "From now on could you always end your answers with a haiku? It genuinely makes "
            "my day.",
        ],
        "question": "What's the difference between TCP and UDP?",
        "expect": ["haiku"],
        "absent": [],
        "private": [],
    },
    {
        "name": "instr-celsius",
        "category": "instruction",
        "session1": [
            "please always give temperatures in celsius, I can't think in fahrenheit at all",
        ],
        "question": "What temperature should I roast a whole chicken at?",
        "expect": ["celsius"],
        "absent": [],
        "private": [],
    },
    {
        "name": "instr-british-spelling",
        "category": "instruction",
        "session1": [
            "Going forward I want replies in British spelling - colour, organise, that kind "
            "of thing.",
        ],
        "question": "Write a short intro paragraph for our company website.",
        "expect": ["British"],
        "absent": [],
        "private": [],
    },
    {
        "name": "instr-no-emoji",
        "category": "instruction",
        "session1": [
            "Please never use emojis in your replies, they look unprofessional in my screenshots.",
        ],
        "question": "Draft a quick message announcing that the office is closed on Monday.",
        "expect": ["emoji"],
        "absent": [],
        "private": [],
    },
    {
        "name": "instr-sign-off",
        "category": "instruction",
        "session1": ["When you draft emails for me, sign them off with 'Warmly, Marguerite'."],
        "question": "Draft an email to my neighbour about trimming the hedge.",
        "expect": ["Marguerite"],
        "absent": [],
        "private": None,
    },
    {
        "name": "instr-code-style",
        "category": "instruction",
        "session1": [
            "when you write python for me: type hints everywhere, and never use pandas, we "
            "can't install it on the cluster",
        ],
        "question": "Write a script that sums a column in a CSV file.",
        "expect": ["type hints", "pandas"],
        "absent": [],
        "private": [],
    },
    {
        "name": "instr-brevity",
        "category": "instruction",
        "session1": ["Don't bother with long intros. Get to the point, three bullet points max."],
        "question": "How do I negotiate a higher salary?",
        "expect": ["bullet points"],
        "absent": [],
        "private": [],
    },
    {
        "name": "instr-tldr",
        "category": "instruction",
        "session1": ["Could you always start with a one-line TL;DR? I skim a lot."],
        "question": "Explain how HTTPS certificates work.",
        "expect": ["TL;DR"],
        "absent": [],
        "private": [],
    },
    {
        "name": "instr-corr-reply-language",
        "category": "instruction",
        "session1": [
            "Reply in Dutch please, I want the practice.",
            "Switch to Italian for replies from now on, I've got my Italian oral exam next month.",
        ],
        "question": "What's a good way to structure a weekly meal plan?",
        "expect": ["Italian"],
        "absent": ["Dutch"],
        "private": [],
    },
    {
        "name": "instr-corr-no-tables",
        "category": "instruction",
        "session1": [
            "Use markdown tables whenever you compare things.",
            "Stop with the tables, they break in my email client. Plain prose comparisons please.",
        ],
        "question": "Compare the iPad Air and the Surface Go for note-taking.",
        "expect": ["prose"],
        "absent": ["markdown tables"],
        "private": [],
    },
    {
        "name": "instr-corr-recipe-units",
        "category": "instruction",
        "session1": [
            "Use cups and ounces for recipes, I don't own a scale.",
            "got a kitchen scale for christmas so grams for recipes from here on",
        ],
        "question": "Give me a recipe for banana bread.",
        "expect": ["grams"],
        "absent": ["ounces"],
        "private": [],
    },
    {
        "name": "instr-corr-form-of-address",
        "category": "instruction",
        "session1": [
            "Please be formal with me and address me as Dr Whitcombe.",
            "ugh you can drop the formality, just call me Bex",
        ],
        "question": "Morning! Can you help me plan my day? Three meetings and a report to finish.",
        "expect": ["Bex"],
        "absent": ["Dr Whitcombe"],
        "private": None,
    },
    # ------------------------------------------------------------------
    # relation
    # ------------------------------------------------------------------
    {
        "name": "rel-corr-reports-to",
        "category": "relation",
        "session1": [
            "My manager is Priya Nair, she's been great about remote days.",
            "After the reorg I now report to Tomás Reyes.",
        ],
        "question": "Who has to approve my expense claim?",
        "expect": ["Tomás"],
        "absent": ["Nair"],
        "private": None,
    },
    {
        "name": "rel-corr-team-lead-passive",
        "category": "relation",
        "session1": [
            "Sarah Lindqvist leads the platform team.",
            "These days the platform team is led by Kwame Mensah.",
        ],
        "question": "Who should I ask about a platform outage?",
        "expect": ["Kwame"],
        "absent": ["Lindqvist"],
        "private": None,
    },
    {
        "name": "rel-corr-partner-employer",
        "category": "relation",
        "session1": [
            "My partner Alex works at Deloitte in the audit practice.",
            "Alex just started at KPMG, much shorter commute.",
        ],
        "question": "Where does my partner work? I need it for a form.",
        "expect": ["KPMG"],
        "absent": ["Deloitte"],
        "private": None,
    },
    {
        "name": "rel-cousin-founded",
        "category": "relation",
        "session1": ["My cousin Ama founded Kente Labs in Accra a couple of years ago."],
        "question": "What's the name of the startup my cousin started?",
        "expect": ["Kente Labs"],
        "absent": [],
        "private": None,
    },
    {
        "name": "rel-friend-married",
        "category": "relation",
        "session1": ["My friend Jonas is married to Ingeborg, they run a bakery together."],
        "question": "Help me write a wedding anniversary card for Jonas and his wife.",
        "expect": ["Ingeborg"],
        "absent": [],
        "private": None,
    },
    {
        "name": "rel-other-name",
        "category": "relation",
        "session1": ["I work at the National Health Service (NHS) as a radiographer."],
        "question": "How does the NHS pension scheme work for someone like me?",
        "expect": ["radiographer"],
        "absent": [],
        "private": None,
    },
    {
        "name": "rel-brother-dentist",
        "category": "relation",
        "session1": ["My brother Cillian is a dentist in Cork, handy for free advice haha."],
        "question": "My molar has been aching since yesterday - who in the family could I ring "
        "about it?",
        "expect": ["Cillian"],
        "absent": [],
        "private": None,
    },
    {
        "name": "rel-cat-diabetic",
        "category": "relation",
        "session1": ["our cat Pixel is diabetic, she gets insulin twice a day with her food"],
        "question": "We're away this weekend - what should I put in the notes for the pet sitter?",
        "expect": ["Pixel", "insulin"],
        "absent": [],
        "private": None,
    },
    {
        "name": "rel-daughter-teacher",
        "category": "relation",
        "session1": ["My daughter's teacher is Mr Okafor, he's lovely."],
        "question": "Help me write a note to my daughter's teacher explaining she'll miss school "
        "on Friday.",
        "expect": ["Okafor"],
        "absent": [],
        "private": None,
    },
    {
        "name": "rel-manager-roadmap",
        "category": "relation",
        "session1": ["my manager Lena Vasquez wants the Q3 roadmap by the end of the month"],
        "question": "Who should I send the roadmap draft to?",
        "expect": ["Lena"],
        "absent": [],
        "private": ["Vasquez"],
    },
    {
        "name": "rel-mum-birthday",
        "category": "relation",
        "session1": ["Mum's birthday is 2 August and she is obsessed with orchids right now."],
        "question": "What should I get my mother for her birthday, and when do I need to order "
        "it by?",
        "expect": ["orchid", "2 August"],
        "absent": [],
        "private": None,
    },
    {
        "name": "rel-dog-greyhound",
        "category": "relation",
        "session1": [
            "We adopted a retired greyhound called Biscuit last spring. He's terrified of stairs.",
        ],
        "question": "Any tips for bringing my dog to a friend's third-floor flat?",
        "expect": ["Biscuit", "stairs"],
        "absent": [],
        "private": ["Biscuit"],
    },
    {
        "name": "rel-cofounder",
        "category": "relation",
        "session1": ["My co-founder Ngozi handles all the fundraising, I do product and hiring."],
        "question": "An investor just emailed asking about our Series A timeline - who on our "
        "side should reply?",
        "expect": ["Ngozi"],
        "absent": [],
        "private": None,
    },
    {
        "name": "rel-colleagues-diets",
        "category": "relation",
        "session1": ["Heads up for later: my colleague Hamid is vegan and Dana can't eat gluten."],
        "question": "Plan a team lunch that works for everyone.",
        "expect": ["vegan", "gluten"],
        "absent": [],
        "private": ["Hamid"],
    },
    {
        "name": "rel-corr-wife-job",
        "category": "relation",
        "session1": [
            "My wife Saoirse works as a paramedic, so she's on nights a lot.",
            "Saoirse just qualified as a midwife! She left the ambulance service last week.",
        ],
        "question": "What would be a thoughtful gift to celebrate my wife's new job?",
        "expect": ["midwife"],
        "absent": ["paramedic"],
        "private": None,
    },
    {
        "name": "rel-corr-puppy-name",
        "category": "relation",
        "session1": [
            "Our new puppy is called Mango.",
            "we renamed the puppy Noodle, the kids outvoted me",
        ],
        "question": "Suggest some wording for an engraved tag for our puppy's collar.",
        "expect": ["Noodle"],
        "absent": ["Mango"],
        "private": None,
    },
    {
        "name": "rel-corr-football-coach",
        "category": "relation",
        "session1": [
            "My son's football coach is Mr Delaney.",
            "The club replaced him - the new coach is Ms Achterberg, seems strict.",
        ],
        "question": "My son will miss Saturday's match - who do I need to let know?",
        "expect": ["Achterberg"],
        "absent": ["Delaney"],
        "private": None,
    },
    {
        "name": "rel-corr-sister-city",
        "category": "relation",
        "session1": [
            "my sister Ines lives in Lyon",
            "Ines got a postdoc in Montreal and flew out on sunday",
        ],
        "question": "What's a good time of day to video call my sister?",
        "expect": ["Montreal"],
        "absent": ["Lyon"],
        "private": None,
    },
    # ------------------------------------------------------------------
    # identifier
    # ------------------------------------------------------------------
    {
        "name": "id-staging-port",
        "category": "identifier",
        "session1": ["heads up, the staging db listens on 5433, not the default port"],
        "question": "Give me the psql command to connect to the staging database as user deploy.",
        "expect": ["5433"],
        "absent": [],
        "private": None,
    },
    {
        "name": "id-laptop-budget",
        "category": "identifier",
        "session1": ["My budget for the new laptop is $2,400, absolute max."],
        "question": "Which MacBook configuration can I afford?",
        "expect": ["2,400"],
        "absent": [],
        "private": None,
    },
    {
        "name": "id-postgres-version",
        "category": "identifier",
        "session1": ["We're on Postgres 16.2 in production."],
        "question": "Can we use MERGE with a RETURNING clause in our production database?",
        "expect": ["16.2"],
        "absent": [],
        "private": None,
    },
    {
        "name": "id-passport-expiry",
        "category": "identifier",
        "session1": ["my passport expires 14 March 2029"],
        "question": "I'm planning a trip to Thailand - do I need to renew my passport first?",
        "expect": ["14 March 2029"],
        "absent": [],
        "private": None,
    },
    {
        "name": "id-work-email",
        "category": "identifier",
        "session1": ["My work email is j.okonkwo-reyes@fernleaf.io if you ever need it for forms."],
        "question": "Fill in the contact section of this conference registration form for me.",
        "expect": ["j.okonkwo-reyes@fernleaf.io"],
        "absent": [],
        "private": None,
    },
    {
        "name": "id-nas-ip",
        "category": "identifier",
        "session1": ["The NAS sits at 192.168.4.77 on the home network."],
        "question": "How do I mount my NAS share from Ubuntu so it survives reboots?",
        "expect": ["192.168.4.77"],
        "absent": [],
        "private": None,
    },
    {
        "name": "id-ticket",
        "category": "identifier",
        "session1": ["I'm working on ticket PAY-3318, the refund rounding bug."],
        "question": "Suggest a branch name and commit message for the fix I'm working on.",
        "expect": ["PAY-3318"],
        "absent": [],
        "private": None,
    },
    {
        "name": "id-aws-account",
        "category": "identifier",
        "session1": ["Our prod AWS account id is 481516234200."],
        "question": "Write the ARN for the deploy-bot IAM role in prod.",
        "expect": ["481516234200"],
        "absent": [],
        "private": None,
    },
    {
        "name": "id-mobile-number",
        "category": "identifier",
        "session1": ["my mobile is +44 7700 900461, best way to reach me"],
        "question": "Draft my out-of-office reply with an emergency contact number.",
        "expect": ["7700 900461"],
        "absent": [],
        "private": None,
    },
    {
        "name": "id-corr-dev-port",
        "category": "identifier",
        "session1": [
            "The dev server runs on port 3000.",
            "changed the dev server to 5173, something else kept grabbing the old port",
        ],
        "question": "What URL do I open to see my local dev server?",
        "expect": ["5173"],
        "absent": ["3000"],
        "private": None,
    },
    {
        "name": "id-corr-node-version",
        "category": "identifier",
        "session1": [
            "We're on Node 18 across all services.",
            "bumped every service to Node 22 over the weekend, no drama",
        ],
        "question": "Can I use the built-in --watch flag and fetch in our services?",
        "expect": ["Node 22"],
        "absent": ["Node 18"],
        "private": None,
    },
    {
        "name": "id-corr-email",
        "category": "identifier",
        "session1": [
            "You can reach me at mara.lindqvist@outlook.com",
            "I don't check outlook anymore, use mara@lindqvist.studio",
        ],
        "question": "Add my email to the footer of this invoice template.",
        "expect": ["mara@lindqvist.studio"],
        "absent": ["mara.lindqvist@outlook.com"],
        "private": None,
    },
    {
        "name": "id-corr-renovation-budget",
        "category": "identifier",
        "session1": [
            "The renovation budget is £18,000.",
            "After the survey we bumped the renovation budget to £23,500.",
        ],
        "question": "Can we still afford underfloor heating in the kitchen?",
        "expect": ["23,500"],
        "absent": ["18,000"],
        "private": None,
    },
    # ------------------------------------------------------------------
    # buried
    # ------------------------------------------------------------------
    {
        "name": "buried-physics-teacher",
        "category": "buried",
        "session1": [
            "Before I forget, some context: I teach physics at a sixth-form college in Swindon, "
            "which is why I keep asking about circuits. Anyway, can you explain how a potential "
            "divider works in simple terms?",
        ],
        "question": "Write me a ten-minute starter activity for my Year 12 class on Monday.",
        "expect": ["physics"],
        "absent": [],
        "private": ["Swindon"],
    },
    {
        "name": "buried-driving-test",
        "category": "buried",
        "session1": [
            "morning! rainy again here, the dog refused to go out lol. anyway I've got my "
            "driving test on the 19th so I'm abit on edge. what's a good breakfast before "
            "an exam?",
        ],
        "question": "What should I practise this weekend before my test?",
        "expect": ["driving test"],
        "absent": [],
        "private": [],
    },
    {
        "name": "buried-mortgage-self-employed",
        "category": "buried",
        "session1": [
            "Can you help me compare two mortgage offers? (For context we're buying in "
            "Harrogate and I'm self-employed, so the income checks are a pain.) Offer A is "
            "4.1% fixed for 5 years with a £999 fee, offer B is 4.4% with no fee.",
        ],
        "question": "Which documents will the lender want to see to prove my income?",
        "expect": ["self-employed"],
        "absent": [],
        "private": ["Harrogate"],
    },
    {
        "name": "buried-aws-region",
        "category": "buried",
        "session1": [
            "getting KeyError: 'region' in this snippet, which is weird because we only ever "
            "deploy to eu-north-1 so it should always be set:\n\n"
            "region = os.environ['region']\n"
            "client = boto3.client('s3', region_name=region)",
        ],
        "question": "Which region should I put in the Terraform provider block?",
        "expect": ["eu-north-1"],
        "absent": [],
        "private": None,
    },
    {
        "name": "buried-coeliac",
        "category": "buried",
        "session1": [
            "Long day. Work was a mess, the printer jammed four times, and the GP finally "
            "confirmed I've got coeliac disease, so that's fun. Anyway, do you know any good "
            "podcasts for the commute?",
        ],
        "question": "Can I eat the sourdough from the bakery on my street?",
        "expect": ["coeliac"],
        "absent": [],
        "private": None,
    },
    {
        "name": "buried-anniversary",
        "category": "buried",
        "session1": [
            "quick q about python decorators - oh and our wedding anniversary is 9 October, "
            "don't let me forget - how do I write a decorator that takes arguments?",
        ],
        "question": "How long have I got to plan something nice for our anniversary?",
        "expect": ["9 October"],
        "absent": [],
        "private": None,
    },
    {
        "name": "buried-sesame",
        "category": "buried",
        "session1": [
            "We're going to a sushi place tonight, which is brave of me given I'm allergic to "
            "sesame, but my friend swears they can accommodate. Which sake should I try?",
        ],
        "question": "What should I watch out for at a Korean barbecue dinner next week?",
        "expect": ["sesame"],
        "absent": [],
        "private": None,
    },
    {
        "name": "buried-bouldering",
        "category": "buried",
        "session1": [
            "Work has been relentless - three launches in a month, my lead quit, and I'm "
            "basically running the team solo (I've been bouldering three nights a week just "
            "to stay sane). How do I ask for a pay rise when things are this chaotic?",
        ],
        "question": "My forearms are really sore, should I take a rest week?",
        "expect": ["bouldering"],
        "absent": [],
        "private": None,
    },
    {
        "name": "buried-landlord",
        "category": "buried",
        "session1": [
            "I need help wording a complaint. The boiler in my flat has been broken for 9 days, "
            "my landlord (a guy called Fenwick who never answers his phone) keeps ignoring my "
            "texts, and it's getting cold. What are my rights here?",
        ],
        "question": "Write a follow-up letter to my landlord, formal this time.",
        "expect": ["Fenwick", "boiler"],
        "absent": [],
        "private": ["Fenwick"],
    },
    {
        "name": "buried-colourblind",
        "category": "buried",
        "session1": [
            "thanks, that worked! unrelated but fwiw I'm colourblind (deuteranopia) so the "
            "red/green chart you suggested yesterday was useless to me haha",
        ],
        "question": "Which colour palette should I use for the charts in my slides?",
        "expect": ["colourblind"],
        "absent": [],
        "private": None,
    },
    # ------------------------------------------------------------------
    # several
    # ------------------------------------------------------------------
    {
        "name": "several-porto-nurse",
        "category": "several",
        "session1": [
            "I'm Ana, I live in Porto, I work night shifts as a nurse and my husband Rui runs "
            "a little tasca near the river.",
        ],
        "question": "Plan a date night for me and my husband on my next night off, somewhere "
        "close to home.",
        "expect": ["Rui", "Porto"],
        "absent": [],
        "private": ["Porto"],
    },
    {
        "name": "several-elixir-nairobi",
        "category": "several",
        "session1": [
            "Quick intro so you have context: backend dev, mostly Elixir, at a payments "
            "startup in Nairobi, team of six.",
        ],
        "question": "Are there any meetups near me for people who use my main language?",
        "expect": ["Elixir", "Nairobi"],
        "absent": [],
        "private": None,
    },
    {
        "name": "several-tokyo-trip",
        "category": "several",
        "session1": [
            "Trip details: flying Lufthansa to Tokyo on 3 November, staying at Hotel Gracery "
            "in Shinjuku, back on the 17th.",
        ],
        "question": "How many nights am I away, and what's worth seeing near my hotel?",
        "expect": ["3 November", "17th", "Gracery"],
        "absent": [],
        "private": ["Gracery"],
    },
    {
        "name": "several-diabetes",
        "category": "several",
        "session1": [
            "For the record: I'm 52, type 2 diabetic, on metformin, and I walk about 8k steps "
            "a day.",
        ],
        "question": "Is intermittent fasting safe for me to try?",
        "expect": ["type 2", "metformin"],
        "absent": [],
        "private": ["metformin"],
    },
    {
        "name": "several-finances",
        "category": "several",
        "session1": [
            "Money stuff: I earn about €68k gross, have €12k in an emergency fund and pay "
            "€950 a month rent.",
        ],
        "question": "How much should I be putting into my pension each month?",
        "expect": ["68k", "12k", "950"],
        "absent": [],
        "private": ["68k"],
    },
    {
        "name": "several-old-house",
        "category": "several",
        "session1": [
            "We've got a 1930s semi, the gas boiler's from 2009 and the loft isn't insulated "
            "at all.",
        ],
        "question": "What should we prioritise to cut our heating bills this winter?",
        "expect": ["1930s", "2009", "loft"],
        "absent": [],
        "private": ["1930s"],
    },
    {
        "name": "several-band",
        "category": "several",
        "session1": [
            "I play bass in a covers band called The Static Llamas, we rehearse Wednesdays, "
            "and I'm on a Fender Jazz Bass.",
        ],
        "question": "Write a short bio for our band's Instagram that mentions my gear.",
        "expect": ["Static Llamas", "Fender"],
        "absent": [],
        "private": None,
    },
    {
        "name": "several-kids",
        "category": "several",
        "session1": [
            "My kids are Oisín (9) and Freya (6). Freya has a nut allergy and Oisín is mad "
            "about dinosaurs.",
        ],
        "question": "Plan a birthday party for my eldest - what should I avoid putting on the "
        "food table?",
        "expect": ["Oisín", "dinosaurs", "nut allergy"],
        "absent": [],
        "private": ["Oisín", "Freya"],
    },
    {
        "name": "several-job-hunt",
        "category": "several",
        "session1": [
            "job hunting again. 7 yrs in UX research, only want remote roles, notice periods "
            "3 months",
        ],
        "question": "Draft a reply to a recruiter asking about my experience and when I could "
        "start.",
        "expect": ["UX research", "7 yrs", "3 months"],
        "absent": [],
        "private": ["UX research"],
    },
    {
        "name": "several-wedding",
        "category": "several",
        "session1": [
            "We're getting married on 21 June at Kinloch Lodge, about 80 guests, and the total "
            "budget is £15k.",
        ],
        "question": "Draft a save-the-date message, and tell me roughly what we can spend per "
        "head on catering.",
        "expect": ["21 June", "Kinloch Lodge", "80 guests", "15k"],
        "absent": [],
        "private": ["Kinloch Lodge"],
    },
    # ------------------------------------------------------------------
    # turn-log
    # ------------------------------------------------------------------
    {
        "name": "log-demo-projector",
        "category": "turn-log",
        "session1": [
            "The investor demo went badly. The projector died halfway through and I had to "
            "present off my laptop screen to eight people.",
        ],
        "question": "What went wrong at the demo, and how do I avoid it next time?",
        "expect": ["projector"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-oslo-trip",
        "category": "turn-log",
        "session1": ["I'm flying to Oslo on Thursday for the Equinor kickoff."],
        "question": "What should I pack for my trip this week?",
        "expect": ["Oslo"],
        "absent": [],
        "private": ["Oslo", "Equinor"],
    },
    {
        "name": "log-cold-cache-bug",
        "category": "turn-log",
        "session1": ["The bug only shows up when the cache is cold, like right after a deploy."],
        "question": "Any ideas for reproducing that flaky bug locally?",
        "expect": ["cold"],
        "absent": [],
        "private": [],
    },
    {
        "name": "log-graphql-opinion",
        "category": "turn-log",
        "session1": [
            "Honestly I think GraphQL was a mistake for our internal tools, way too much "
            "boilerplate for three consumers.",
        ],
        "question": "We're starting a new internal admin API - which approach should I push for?",
        "expect": ["GraphQL"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-early-waking",
        "category": "turn-log",
        "session1": ["I've been waking up at 4am every night sinse I started the new meds."],
        "question": "I'm seeing my doctor next week, what should I mention about my sleep?",
        "expect": ["4am"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-kitchen-flood",
        "category": "turn-log",
        "session1": [
            "Our kitchen flooded last night, a pipe under the sink burst and soaked the "
            "floorboards.",
        ],
        "question": "Who do I call first about the damage, and what should I photograph?",
        "expect": ["flood", "floorboards"],
        "absent": [],
        "private": ["floorboards"],
    },
    {
        "name": "log-relocation-plan",
        "category": "turn-log",
        "session1": [
            "We're thinking about moving to Valencia next spring so the kids grow up bilingual.",
        ],
        "question": "What should we research first about schools for the move?",
        "expect": ["Valencia"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-declined-offer",
        "category": "turn-log",
        "session1": [
            "Decided to turn down the offer from Klarna - the equity wasn't worth the commute.",
        ],
        "question": "Should I tell the recruiter why I said no, and how?",
        "expect": ["Klarna"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-conference-talk",
        "category": "turn-log",
        "session1": [
            "Gave my first conference talk today at PyCon Lithuania, on async testing, and "
            "totally blanked on one question.",
        ],
        "question": "Help me write a LinkedIn post about yesterday's talk.",
        "expect": ["PyCon Lithuania", "async testing"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-brake-noise",
        "category": "turn-log",
        "session1": ["The car makes a grinding noise when I brake, but only when it's wet out."],
        "question": "Is it safe to drive to my mum's this weekend with that noise?",
        "expect": ["grinding"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-book-opinion",
        "category": "turn-log",
        "session1": [
            "Finished Piranesi last night. Loved the atmosphere but the ending felt rushed.",
        ],
        "question": "Recommend something similar to the book I just finished, ideally with a "
        "stronger ending.",
        "expect": ["Piranesi"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-garden-weekend",
        "category": "turn-log",
        "session1": [
            "This weekend I'm planting garlic in the raised beds and pruning the apple tree.",
        ],
        "question": "What should I do if it rains on Saturday? Can my garden jobs wait?",
        "expect": ["garlic", "apple tree"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-outage",
        "category": "turn-log",
        "session1": [
            "Prod went down for 40 minutes yesterday because someone rotated the TLS cert "
            "without updating the load balancer.",
        ],
        "question": "Help me write the postmortem for the outage.",
        "expect": ["TLS", "load balancer", "40 minutes"],
        "absent": [],
        "private": ["40 minutes"],
    },
    {
        "name": "log-pricing-argument",
        "category": "turn-log",
        "session1": [
            "My cofounder and I argued about pricing again - she wants freemium, I want a "
            "14-day trial.",
        ],
        "question": "Give me arguments for my side in tomorrow's pricing discussion.",
        "expect": ["14-day trial"],
        "absent": [],
        "private": None,
    },
    {
        "name": "log-burnout",
        "category": "turn-log",
        "session1": [
            "feeling pretty burnt out tbh, third weekend in a row on the Halloran migration",
        ],
        "question": "Can you help me draft a message to my boss asking for a lighter week?",
        "expect": ["burnt out", "Halloran"],
        "absent": [],
        "private": ["Halloran"],
    },
)
