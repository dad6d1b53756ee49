from django.urls import path

from lab.play import chat_views, views

urlpatterns = [
    path("", views.play_index, name="play"),
    path("<int:pk>/", views.play_session_page, name="play-session"),
    path("<int:pk>/submit", views.play_submit_view, name="play-submit"),
    path("<int:pk>/finish", views.play_finish_view, name="play-finish"),
    path("<int:pk>/reply", chat_views.chat_reply_view, name="play-chat-reply"),
    path("<int:pk>/close", chat_views.chat_close_view, name="play-chat-close"),
]
